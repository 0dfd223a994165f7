"""One run reference: ``RUN`` or ``RUN:CONFIG``, where ``RUN`` is a run id, a run name (its
newest complete run) or a unique prefix of a run id.

Every command and screen that takes a run reads it here (:func:`parse_ref`,
:func:`resolve_run`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.errors import ConfigError, StoreError
from evalcore.read.runs import require_complete
from evalcore.records import Configuration

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Run
    from evalcore.store import Store


@dataclass(frozen=True, slots=True)
class Ref:
    """A parsed ``RUN`` or ``RUN:CONFIG`` reference (``configuration`` None for all)."""

    run: str
    configuration: str | None = None


def parse_ref(text: str) -> Ref:
    """``"demo:G/hybrid"`` -> ``Ref("demo", "G/hybrid")``; ``"demo"`` -> ``Ref("demo")``.

    The configuration follows the last ``:`` before the last ``/`` (strategy/retriever; a
    strategy name holds no ``:``, a retriever may: ``demo:C/bm25:german``), so a run name
    with a colon but no configuration still reads as a run. ConfigError for an empty run or
    a malformed configuration.
    """
    text = str(text).strip()
    colon = text.rfind(":", 0, max(text.rfind("/"), 0))
    run, configuration = (text[:colon], text[colon + 1 :]) if colon >= 0 else (text, "")
    if not run:
        raise ConfigError(f"run reference {text!r}: no run before the ':' (expected RUN or RUN:STRATEGY/RETRIEVER)")
    if not configuration:
        return Ref(run)
    try:
        Configuration.parse(configuration)
    except ValueError as exc:
        raise ConfigError(f"run reference {text!r}: {exc}") from None
    return Ref(run, configuration)


def _by_name(store: Store, run: str) -> pd.DataFrame:
    """The runs named ``run``, newest first (empty when ``run`` is an exact run id)."""
    if not store.query("SELECT run_id FROM runs WHERE run_id = ?", [run]).empty:
        return store.query("SELECT run_id, status, reason FROM runs WHERE false")
    return store.query("SELECT run_id, status, reason FROM runs WHERE name = ? ORDER BY created_at DESC", [run])


def find_run(store: Store, run: str) -> Run:
    """The run a reference names, whatever its status (what ``show`` prints): an exact run id,
    else a run name (its newest complete run, else its newest run), else a unique prefix of a
    run id. StoreError naming the reference when it is unknown or ambiguous."""
    named = _by_name(store, run)
    if not named.empty:
        done = named[named["status"] == "complete"]
        return store.run(str((done if len(done) else named).iloc[0]["run_id"]))
    return store.run(run)


def resolve_run(store: Store, run: str) -> Run:
    """The complete run a reference names: an exact run id, else a run name (its newest complete
    run), else a unique prefix of a run id. StoreError for an unknown or ambiguous reference,
    and for a run that is not complete (naming its status and reason)."""
    named = _by_name(store, run)
    if not named.empty:
        done = named[named["status"] == "complete"]
        if done.empty:
            newest = named.iloc[0]
            why = f": {newest['reason']}" if newest["reason"] else ""
            raise StoreError(
                f"run name {run!r} has no complete run in {store.path} "
                f"(newest {newest['run_id']} is {newest['status']}{why})"
            )
        return require_complete(store, str(done.iloc[0]["run_id"]))
    try:
        run_id = store.run(run).run_id
    except StoreError:
        raise StoreError(f"no run with id or name {run!r} in {store.path}; see: python -m evalcore list") from None
    return require_complete(store, run_id)
