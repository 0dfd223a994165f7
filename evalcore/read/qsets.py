"""Question sets for the screens: versions, items resolved against a run's corpus, and the
note Compare shows when two runs used different set versions (evalcore.qsets holds the rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalcore import qsets

if TYPE_CHECKING:
    from evalcore.store import Store


def versions_note(store: Store, run_id: str, other: str) -> str | None:
    """The sentence Compare shows when two runs used different question-set versions."""
    return qsets.versions_note(store.run(run_id), store.run(other))
