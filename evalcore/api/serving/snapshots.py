"""What the API keeps between requests, and when it reads it again: the keys in use and each
deployment, read from the store only when the store's files changed since (any commit by any
process, the dashboard's and the CLI's included, changes the modification time or size of the
DuckDB file or its write-ahead log). Opening the store costs tens of milliseconds; a production
client revalidating its deployment many times a second must not pay it each time.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from evalcore.service.deployments import check_deployment_name, get_deployment

if TYPE_CHECKING:
    from evalcore.service.deployments import Deployment
    from evalcore.store import Store

T = TypeVar("T")


@functools.lru_cache(maxsize=64)
def _files(path: Path) -> tuple[str, str]:
    """The store file and its write-ahead log, as strings (a revalidation takes the signature
    once: building the paths anew cost as much as the two ``stat`` calls)."""
    return os.fspath(path), os.fspath(path.with_name(path.name + ".wal"))


def signature(path: Path) -> tuple[int, ...]:
    """(modification time in ns, size, inode) of the store file and of its write-ahead log (0s when absent)."""
    out: list[int] = []
    for file in _files(path):
        try:
            st = os.stat(file)
            out += [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            out += [0, 0, 0]
    return tuple(out)


class Snapshot(Generic[T]):
    """A value read from the store at ``path`` by ``read``, kept until the store changes."""

    def __init__(self, path: Path, read: Callable[[], T]) -> None:
        self.path = path
        self.read = read
        self._lock = threading.Lock()
        self._seen: tuple[int, ...] | None = None
        self._value: T | None = None

    def fresh(self) -> bool:
        """Whether the value kept is still the store's (no read needed)."""
        with self._lock:
            return self._seen is not None and self._seen == signature(self.path)

    def kept_at(self, seen: tuple[int, ...]) -> tuple[bool, T | None]:
        """(True, the value kept) when it was read at the store's signature ``seen``, else (False, None)."""
        with self._lock:
            if self._seen is not None and self._seen == seen:
                return True, self._value
        return False, None

    def get(self) -> T:
        now = signature(self.path)
        with self._lock:
            if self._seen == now:
                return self._value  # type: ignore[return-value]  # set with _seen
        value = self.read()  # the signature taken before the read: a commit during it reads again next time
        with self._lock:
            self._seen, self._value = now, value
        return value

    def forget(self) -> None:
        with self._lock:
            self._seen = None


class Deployments:
    """The deployments production reads, each a :class:`Snapshot` (at most :data:`KEPT` names,
    only names that exist: a request for a missing name reads the store)."""

    KEPT = 1000

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._kept: dict[str, Snapshot[Deployment | None]] = {}

    def fresh(self, name: str) -> bool:
        """Whether deployment ``name`` is kept and still the store's."""
        with self._lock:
            snap = self._kept.get(name)
        return snap is not None and snap.fresh()

    def kept_at(self, name: str, seen: tuple[int, ...]) -> Deployment | None:
        """Deployment ``name`` when it is kept and was read at the store's signature ``seen``;
        None otherwise (read it with :meth:`get`). ``name`` must be as kept: a name that
        :func:`~evalcore.service.deployments.check_deployment_name` leaves unchanged (every kept
        name is one, and the check of a checked name gives it back)."""
        with self._lock:
            snap = self._kept.get(name)
        if snap is None:
            return None
        ok, value = snap.kept_at(seen)
        return value if ok else None

    def get(self, name: str) -> Deployment | None:
        name = check_deployment_name(name)
        with self._lock:
            snap = self._kept.get(name)
        if snap is None:
            snap = Snapshot(self.store.path, lambda: get_deployment(self.store, name))
            found = snap.get()
            if found is not None:
                with self._lock:
                    if len(self._kept) >= self.KEPT:
                        self._kept.clear()
                    self._kept[name] = snap
            return found
        return snap.get()
