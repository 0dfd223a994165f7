"""Threshold in production: a small RAG service that refuses at the threshold a product manager
deployed, reading it through ``evalcore.Client`` on every request, and sends its queries back
when told to.

The refusal gate is the one evalcore evaluates (docs/METHODS.md, "The refusal threshold"): of the
top 4 hits, keep those closer than the threshold (cosine distance ``< t``; for a retriever whose
own score is the gate, ``score > t``); nothing kept means "no answer" before any model is called.
The threshold, the configuration it was decided for and its version come from the deployment
(``client.deployment("production")``): the client revalidates it with ``If-None-Match`` at most
every ``max_age`` seconds, and when the service is down it keeps the last value with ``stale``
set, so the app never stops refusing at the decided threshold.

Only when told to (``--post-traffic``, or ``EVALCORE_POST_TRAFFIC=1``) does it send its queries
back: each request's query is then queued and posted in batches (``client.post_traffic``); each
carries its own id, so a batch sent twice (a retry after a timeout) is stored once, and the
service replays them for its Traffic screen and ``traffic check --deployment``. Without it the
example only reads the deployment: a try-out's demo queries must not count as production's
traffic (they would be judged with it).

Try it against a service (the key needs ``read``; ``traffic:write`` too with ``--post-traffic``)::

    EVALCORE_API_KEY=evk_... python examples/threshold_in_production.py https://evalcore.example.org \\
        "How do I open a file?" "best pizza in town?"

and, in the real app, post its queries to the deployment::

    EVALCORE_API_KEY=evk_... python examples/threshold_in_production.py --post-traffic URL QUERY...

``search`` below stands in for your retriever: replace it with the one the deployment's
configuration names (``live.configuration``), e.g. your vector store's query with its distances.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import evalcore
from evalcore.errors import ServiceError

TOP = 4  # the gate looks at the top 4 hits, as evalcore measured it


@dataclass(frozen=True)
class Hit:
    text: str
    distance: float  # cosine distance: 0 is the same direction


def search(query: str, k: int) -> list[Hit]:
    """Your retriever. This stand-in knows one passage and measures word overlap as a distance."""
    passage = "Use open(path) to open a file; the with statement closes it."
    words, known = set(query.lower().split()), set(passage.lower().split())
    distance = 1.0 - len(words & known) / max(len(words), 1)
    return [Hit(passage, distance)][:k]


class App:
    def __init__(self, url: str, key: str, deployment: str = "production", post_traffic: bool = False) -> None:
        self.client = evalcore.Client(url, key, max_age=30)
        self.deployment = deployment
        self.post_traffic = post_traffic  # False: read the deployment, send nothing back
        self.pending: list[dict[str, str]] = []
        self.lock = threading.Lock()

    def answer(self, query: str) -> str:
        live = self.client.deployment(self.deployment)  # cheap: a cached value most of the time
        hits = search(query, TOP)
        kept = [h for h in hits if h.distance < live.threshold]
        if self.post_traffic:
            with self.lock:
                self.pending.append(
                    {"id": uuid.uuid4().hex, "query": query, "time": datetime.now(UTC).isoformat(timespec="seconds")}
                )
        note = " (threshold from the last known deployment: the service is unreachable)" if live.stale else ""
        if not kept:
            return f"I don't know.{note}"
        return f"{kept[0].text} [t = {live.threshold:.4f}, {live.configuration}, version {live.version}]{note}"

    def flush(self) -> None:
        """Post the queued queries (call it from a timer or at shutdown); kept when the post fails."""
        with self.lock:
            batch, self.pending = self.pending, []
        if not batch:
            return
        try:
            results = self.client.post_traffic(self.deployment, batch)
        except ServiceError:
            with self.lock:
                self.pending = batch + self.pending  # the same ids go again: stored once
            return
        refused = [r for r in results if r.status == "problem"]
        for r in refused:
            print(f"query {r.id} not stored: {r.reason}", file=sys.stderr)


def main(argv: list[str]) -> int:
    post = "--post-traffic" in argv or os.environ.get("EVALCORE_POST_TRAFFIC", "") in {"1", "true", "yes"}
    argv = [a for a in argv if a != "--post-traffic"]
    if len(argv) < 2:
        print(__doc__)
        return 2
    app = App(argv[0], os.environ["EVALCORE_API_KEY"], post_traffic=post)
    for query in argv[1:]:
        print(f"{query} -> {app.answer(query)}")
    app.flush()
    if not post:
        print(f"(read deployment {app.deployment} only; --post-traffic sends the queries back)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
