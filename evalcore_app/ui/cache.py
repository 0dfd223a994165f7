"""What a page keeps of a library function's result: :func:`cached`, keyed by the function and
its arguments, a store by its path and change stamp, a table :func:`cached` handed out by
where it came from."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import streamlit as st

from evalcore.figures.build import Figure
from evalcore.records import Corpus, Document
from evalcore.store import Store

P = ParamSpec("P")
R = TypeVar("R")

#: Each result :func:`cached` handed out as a copy (a table, an array), by its ``id``: the
#: function and key it came from; dropped when the result is.
_ORIGINS: dict[int, tuple[str, tuple[object, ...]]] = {}


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """The store's change stamp: size and modification time of its file and its write-ahead
    log. Every write changes one of them (a commit goes to the log, a checkpoint to the file),
    whichever process made it; reading changes neither."""
    stamps: list[tuple[int, int] | None] = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            st_ = file.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((st_.st_mtime_ns, st_.st_size))
    return tuple(stamps)


def _key(arg: object) -> object:
    """What identifies an argument in the cache key: a store by its path and change stamp; a
    copy that :func:`cached` handed out (a table, an array) by the function and key it came
    from (a screen passes the threshold sweep to a dozen functions at every rerun: hashing its
    rows each time took an eighth of a rerun); a corpus, a document or a tuple of records
    (frozen dataclasses) by Python's hash of its fields (the hash of each text is computed once
    and kept by the string), not by hashing its content again at every rerun (seconds for a
    10,000-document corpus); anything else as it is."""
    if isinstance(arg, Store):
        return ("store", str(arg.path), _stamp(arg.path))
    if (origin := _ORIGINS.get(id(arg))) is not None:  # alive: its entry goes when it does
        return ("result", *origin)
    if isinstance(arg, Corpus | Document) or (isinstance(arg, tuple) and arg and is_dataclass(arg[0])):
        try:
            return ("record", type(arg).__name__, len(arg) if isinstance(arg, tuple) else 0, hash(arg))
        except TypeError:  # a record with an unhashable field: hashed by content, as before
            return arg
    return arg


@st.cache_resource(show_spinner=False, max_entries=1024)
def _call(name: str, key: tuple, _fn: Callable[..., Any], _args: tuple, _kwargs: dict) -> Any:
    return _fn(*_args, **_kwargs)


def _shared(value: object) -> bool:
    """A result every session may share as it is: a figure (never changed after it is built,
    and slow to copy) or a scalar, or a tuple of those."""
    if isinstance(value, tuple):
        return all(_shared(v) for v in value)
    return value is None or isinstance(value, Figure | str | int | float | bool)


def cached(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)``, cached per (function, arguments): the one way a screen keeps
    what a library function returned (``cached(compare.pair_queries, store, a, b, k)``).

    The function is passed itself, never a name looked up at run time; the cache key names it
    by module and qualified name. A :class:`Store` argument is keyed by its path and change
    stamp (:func:`_stamp`), so a write anywhere (a finished run, an imported traffic log, a
    label, a decision) is seen at the next call. Figures are shared without copying; any other
    result is a copy (a screen may change it). Such a copy passed on to another call (a table,
    an array) is keyed by where it came from, not by its content: a screen that changes one in
    place passes on a copy of it instead.
    """
    name = f"{fn.__module__}.{fn.__qualname__}"
    key = (tuple(_key(a) for a in args), tuple((k, _key(kwargs[k])) for k in sorted(kwargs)))
    value = _call(name, key, fn, args, dict(kwargs))
    if _shared(value):
        return value
    mine = copy.deepcopy(value)
    try:
        weakref.finalize(mine, _ORIGINS.pop, id(mine), None)
    except TypeError:  # no weak reference to it (a list, a dict): keyed by content
        return mine
    _ORIGINS[id(mine)] = (name, key)
    return mine
