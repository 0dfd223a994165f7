"""The ``decisions`` table: a chosen refusal threshold with its note, who chose it and the
threshold claim it was made under."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from evalcore.store.basics import now
from evalcore.store.connection import Connection


class Decisions(Connection):
    """The one writer of ``decisions``."""

    def save_decision(
        self,
        run_id: str,
        strategy: str,
        retriever: str,
        threshold: float,
        note: str,
        author: str | None = None,
        claim: Mapping[str, Any] | None = None,
    ) -> str:
        """Store a chosen threshold with its note, who chose it (``author``, None: not recorded)
        and the threshold claim it was made under (``claim``: the JSON object of
        :class:`evalcore.measures.claim.Claim`); returns the decision id."""
        decision_id = uuid.uuid4().hex[:12]
        c = dict(claim or {})
        with self.transaction() as con:
            con.execute(
                "INSERT INTO decisions (decision_id, run_id, strategy, retriever, threshold, note, created_at, "
                "author, max_bluff_rate, max_lost_rate, confidence, n_ood, n_answerable, bluff_status, "
                "lost_status, bluff_ok_up_to, lost_ok_above, claim_method, claim) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    decision_id,
                    run_id,
                    strategy,
                    retriever,
                    float(threshold),
                    note,
                    now(),
                    author,
                    c.get("max_bluff_rate"),
                    c.get("max_lost_rate"),
                    c.get("confidence"),
                    c.get("n_ood"),
                    c.get("n_answerable"),
                    c.get("bluff_status"),
                    c.get("lost_status"),
                    c.get("bluff_ok_up_to"),
                    c.get("lost_ok_above"),
                    c.get("method"),
                    json.dumps(c) if c else None,
                ],
            )
        return decision_id
