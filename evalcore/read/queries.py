"""One query read back: its hits in a configuration, the needle inside them, what the gate
does with them at a threshold, and the answer it leads to (citations and prompt, METHODS.md "One query")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsInt, cast

from evalcore.configurations import info
from evalcore.embedding.embedder import piece_counter
from evalcore.errors import StoreError
from evalcore.measures.threshold import COSINE, DEFAULT_TOP, Axis, gate
from evalcore.read.citations import NoAnswer, Source, context_for_query, page_range, pages_label
from evalcore.read.citations import locator as cite
from evalcore.retrieval.bm25 import Analyzer, tokens, words
from evalcore.retrieval.names import ANALYZED, split_retriever

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.records import Configuration
    from evalcore.store import Store

#: Hits stored (and shown) per query and configuration.
STORED_HITS = 20


def _missing(value: object) -> bool:
    """None, NaN and pandas' NA (whose truth value raises) are all missing."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:  # pd.NA
        return True


def _missing_map(value: object) -> bool:
    """A document without a page map: NULL in the store (None, NaN or pandas' NA), or empty."""
    if hasattr(value, "__len__") and not isinstance(value, str):
        return len(value) == 0
    return True


def chunk_locator(start: object, end: object, page_starts: Sequence[int] | None = ()) -> str:
    """The locator of a chunk's content (``#page=N`` or ``#char=from,to``); "" for a chunk made
    elsewhere that could not be located in its document (no offsets)."""
    if _missing(start) or _missing(end):
        return ""
    # a present offset is a number read from the store (int, numpy integer or float)
    return cite(int(cast(SupportsInt, start)), int(cast(SupportsInt, end)), page_starts)


def plural(n: int, word: str) -> str:
    """``"1 source"``, ``"2 sources"``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def search_queries(store: Store, run_id: str, text: str = "", limit: int = 200) -> pd.DataFrame:
    """query_id, domain, kind (near/far, or the variant of an in-domain query), valid, text of
    queries whose id or text contains ``text`` (case-insensitive), in id order, at most ``limit``."""
    like = f"%{text.strip().lower()}%"
    return store.query(
        "SELECT query_id, domain, coalesce(kind, variant, '') AS kind, valid, text FROM queries "
        "WHERE run_id = ? AND (lower(text) LIKE ? OR lower(query_id) LIKE ?) ORDER BY domain, query_id LIMIT ?",
        [run_id, like, like, limit],
    )


def query_row(store: Store, run_id: str, query_id: str) -> dict[str, Any]:
    """The query's stored row (missing values as None) plus ``needle_locator``: where its
    needle is (``#page=N`` in a PDF, else ``#char=from,to``; None without a valid span), and
    ``needle_text``: the document's text at that span (None without one).
    StoreError naming an unknown id."""
    df = store.query(
        "SELECT q.*, d.page_starts AS needle_pages, "
        'substr(d.text, q.start + 1, q."end" - q.start) AS needle_text FROM queries q LEFT JOIN documents d '
        "ON d.run_id = q.run_id AND d.doc_id = q.doc_id WHERE q.run_id = ? AND q.query_id = ?",
        [run_id, query_id],
    )
    if df.empty:
        raise StoreError(f"run {run_id} has no query {query_id!r}")
    raw = df.iloc[0].to_dict()
    pages = raw.pop("needle_pages")
    pages = None if _missing_map(pages) else [int(x) for x in pages]
    row: dict[str, Any] = {str(k): (None if _missing(v) else v) for k, v in raw.items()}
    row["needle_locator"] = (
        cite(int(row["start"]), int(row["end"]), pages) if row["valid"] and row["start"] is not None else None
    )
    return row


def query_hits(
    store: Store, run_id: str, query_id: str, configuration: Configuration, top: int = STORED_HITS
) -> pd.DataFrame:
    """Top hits of one query in one configuration with their chunk.

    Columns: rank, distance, score, correct, chunk_id, doc_id, title, section, start, end,
    locator (``#page=N`` for a PDF chunk, else ``#char=from,to``), pages (``"p. 3"``,
    ``"pp. 3-4"``, or ``""`` without a page map), page_starts (the document's page map),
    path (the document's file), content, needle_start, needle_end (the needle's offsets
    inside ``content``, NaN when the needle is not wholly inside it, always NaN for an
    out-of-domain query), problem (why a chunk made elsewhere could not be located, else
    ``""``). A hit of a run made elsewhere has no cosine distance (NaN); a chunk that could
    not be located has no offsets, an empty locator and no pages.
    """
    df = store.query(
        """
        SELECT h.rank, h.distance, h.score, h.correct, h.chunk_id, c.doc_id, coalesce(d.title, c.doc_id) AS title,
               coalesce(c.section, '') AS section, c.start, c."end", c.content, d.page_starts,
               coalesce(d.path, '') AS path, coalesce(c.problem, '') AS problem,
               q.doc_id AS needle_doc, q.start AS needle_from, q."end" AS needle_to
        FROM hits h
        JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy AND c.chunk_id = h.chunk_id
        LEFT JOIN documents d ON d.run_id = c.run_id AND d.doc_id = c.doc_id
        JOIN queries q ON q.run_id = h.run_id AND q.query_id = h.query_id
        WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? AND h.query_id = ? AND h.rank <= ?
        ORDER BY h.rank
        """,
        [run_id, configuration.strategy, configuration.retriever, query_id, top],
    )
    maps = [() if _missing_map(m) else tuple(int(x) for x in m) for m in df["page_starts"]]
    df["page_starts"] = maps  # tuples: the frame stays hashable for the dashboard's cache
    df["locator"] = [chunk_locator(s, e, m) for s, e, m in zip(df["start"], df["end"], maps, strict=True)]
    ranges = [
        None if _missing(s) or _missing(e) else page_range(m, int(s), int(e))
        for s, e, m in zip(df["start"], df["end"], maps, strict=True)
    ]
    df["pages"] = [pages_label(*r) if r else "" for r in ranges]
    needle_from = df["needle_from"].astype("float64")
    needle_to = df["needle_to"].astype("float64")
    inside = (
        (df["needle_doc"] == df["doc_id"]).fillna(False).astype(bool)
        & (needle_from >= df["start"]).fillna(False)
        & (needle_to <= df["end"]).fillna(False)
    )
    df["needle_start"] = (needle_from - df["start"]).where(inside)
    df["needle_end"] = (needle_to - df["start"]).where(inside)
    return df.drop(columns=["needle_doc", "needle_from", "needle_to"])


def highlight(content: str, start: object, end: object) -> list[tuple[str, bool]]:
    """``content`` split into (piece, is_needle) parts; one part when the needle is not inside
    (``start``/``end`` missing: None, NaN or pandas' NA)."""
    if _missing(start) or _missing(end):
        return [(content, False)]
    s, e = int(start), int(end)  # type: ignore[call-overload]
    if not 0 <= s <= e <= len(content):
        raise ValueError(f"needle range [{s}, {e}) outside a content of {len(content)} characters")
    return [p for p in ((content[:s], False), (content[s:e], True), (content[e:], False)) if p[0]]


@dataclass(frozen=True, slots=True)
class QueryView:
    """One query in one configuration: its rank, its hits, and what the gate keeps at a threshold."""

    configuration: Configuration
    domain: str  # "in" or "out"
    kind: str  # near/far for out-of-domain queries, else ""
    first_correct_rank: int | None
    destroyed: bool
    hits: Any  # pd.DataFrame, see query_hits, plus gate_value (what the gate reads)
    kept: Any  # pd.DataFrame: the top-4 hits the gate keeps at threshold
    threshold: float
    axis: Axis = COSINE  # what the gate reads: the cosine distance, or a retriever's own score

    @property
    def answered(self) -> bool:
        return len(self.kept) > 0

    @property
    def kept_correct(self) -> int:
        return int(self.kept["correct"].sum()) if self.answered else 0

    @property
    def lost(self) -> bool:
        """In-domain, a correct chunk in the top 4, and the gate dropped every correct one."""
        return (
            self.domain == "in"
            and self.first_correct_rank is not None
            and self.first_correct_rank <= DEFAULT_TOP
            and self.kept_correct == 0
        )

    @property
    def bluff(self) -> bool:
        return self.domain == "out" and self.answered

    def rank_text(self) -> str:
        """Where the answer ranks, or what an out-of-domain query's nearest chunk is."""
        if self.domain == "out":
            if self.hits.empty:
                return f"out-of-domain ({self.kind or 'no kind'}) · no hit"
            # the value the gate decides on: the nearest of the top 4 (for a BM25 or hybrid
            # ranking, rank 1 need not be the nearest by cosine distance)
            mark = "d" if self.axis.column == "distance" else "score"
            values = self.hits["gate_value"].head(DEFAULT_TOP).astype(float)
            nearest = float(values.max() if self.axis.higher_is_closer else values.min())
            return f"out-of-domain ({self.kind or 'no kind'}) · nearest in the top {DEFAULT_TOP} {mark} = {nearest:.3f}"
        if self.destroyed:
            return "destroyed: no chunk holds the answer"
        if self.first_correct_rank is None:
            return "no correct chunk in the ranking"
        shown = "" if self.first_correct_rank <= STORED_HITS else f" (beyond the top {STORED_HITS} shown)"
        return f"first correct rank {self.first_correct_rank}{shown}"

    def gate_text(self) -> str:
        """What the gate does at the threshold, in the words of the outcome."""
        if self.domain == "out":
            return (
                f"bluffs: answers from {plural(len(self.kept), 'source')}"
                if self.answered
                else "NO ANSWER, as it should"
            )
        if not self.answered:
            if self.lost:
                return (
                    f"NO ANSWER · lost answer: the correct chunk at rank {self.first_correct_rank} "
                    "was dropped by the gate"
                )
            return "NO ANSWER"
        sources = f"answers from {plural(len(self.kept), 'source')}"
        if self.kept_correct:
            return f"{sources}, {self.kept_correct} right"
        if self.lost:
            return (
                f"{sources}, none right · lost answer: the correct chunk at rank "
                f"{self.first_correct_rank} was dropped by the gate"
            )
        return f"{sources}, none right"

    def headline(self) -> str:
        """``"E/dense · first correct rank 3 · answers from 2 sources, 1 right"``."""
        return f"{self.configuration.label} · {self.rank_text()} · {self.gate_text()}"


def query_view(store: Store, run_id: str, query_id: str, configuration: Configuration, threshold: float) -> QueryView:
    """Rank of the first correct hit, the top hits, and the hits the gate at ``threshold`` keeps
    (on the configuration's axis: the cosine distance, or a run made elsewhere's own score)."""
    res = store.query(
        "SELECT q.domain, q.kind, r.first_correct_rank, r.destroyed FROM queries q "
        "LEFT JOIN results r ON r.run_id = q.run_id AND r.query_id = q.query_id AND r.strategy = ? "
        "AND r.retriever = ? WHERE q.run_id = ? AND q.query_id = ?",
        [configuration.strategy, configuration.retriever, run_id, query_id],
    )
    if res.empty:
        raise StoreError(f"run {run_id} has no query {query_id!r}")
    row = {k: (None if _missing(v) else v) for k, v in res.iloc[0].to_dict().items()}
    axis = info(store, run_id, configuration.strategy, configuration.retriever).axis
    hits = query_hits(store, run_id, query_id, configuration)
    hits["gate_value"] = hits[axis.column]
    kept = hits.iloc[gate(hits["gate_value"].tolist(), threshold, DEFAULT_TOP, axis.higher_is_closer)]
    kept = kept.reset_index(drop=True)
    rank = None if row["first_correct_rank"] is None else int(row["first_correct_rank"])
    kind = str(row["kind"] or "") if row["domain"] == "out" else ""
    return QueryView(
        configuration,
        str(row["domain"]),
        kind,
        rank,
        bool(row["destroyed"] or False),
        hits,
        kept,
        float(threshold),
        axis,
    )


@dataclass(frozen=True, slots=True)
class Answer:
    """What the pipeline would send at a threshold: the prompt with its word-piece count and
    the citation table (index, doc_id, doc_name, label (section, and pages for a PDF),
    fragment (the locator), source (the document's file with the locator, e.g.
    ``manual.pdf#page=3``), quote, distance), or
    ``answered`` False with the NO ANSWER line the user gets in ``prompt``."""

    answered: bool
    prompt: str
    citations: Any  # pd.DataFrame
    pieces: int | None
    uncited: tuple[int, ...] = ()  # ranks the gate kept but that are headings only: not cited


def query_answer(
    store: Store, run_id: str, query_id: str, configuration: Configuration, threshold: float, count: bool = True
) -> Answer:
    """Gate the query's top hits at ``threshold`` and build the citations and prompt
    (:func:`answer_for` of :func:`query_view`); quotes are chunk ``content``."""
    view = query_view(store, run_id, query_id, configuration, threshold)
    return answer_for(view, str(query_row(store, run_id, query_id)["text"]), count)


def answer_for(view: QueryView, question: str, count: bool = True) -> Answer:
    """The answer to ``question`` from a :class:`QueryView`'s top hits at its threshold
    (:func:`evalcore.read.citations.context_for_query`: the gate, numbered citations, the prompt
    and its word pieces, or the NO ANSWER line)."""
    import pandas as pd

    top = view.hits[view.hits["rank"] <= DEFAULT_TOP]
    sources = [
        Source(
            str(h.doc_id),
            # a chunk that could not be located is not credited to its document's text
            str(h.title or h.doc_id) + (" (chunk not found in it)" if h.problem else ""),
            None if h.problem else (h.section or None),
            None if _missing(h.start) else int(h.start),
            None if _missing(h.end) else int(h.end),
            h.content,
            float(h.gate_value),
            h.page_starts,
        )
        for h in top.itertuples()
    ]
    counter = piece_counter() if count else None
    result = context_for_query(question, sources, view.threshold, top=DEFAULT_TOP, count_pieces=counter, axis=view.axis)
    if isinstance(result, NoAnswer):  # result.answered is False exactly for NoAnswer
        return Answer(False, result.message, pd.DataFrame(), None, result.uncited)
    paths = dict(zip(top["doc_id"].astype(str), top["path"], strict=True))
    table = pd.DataFrame(
        [
            {
                "index": c.index,
                "doc_id": c.doc_id,
                "doc_name": c.doc_name,
                "label": c.label,
                "fragment": c.fragment,
                "source": f"{paths.get(c.doc_id) or c.doc_id}{c.fragment}",
                "quote": c.quote,
                "distance": c.distance,
            }
            for c in result.citations
        ]
    )
    return Answer(True, result.prompt, table, result.pieces, result.uncited)


def query_tokens(
    store: Store, run_id: str, query_id: str, configuration: Configuration, top: int = DEFAULT_TOP
) -> pd.DataFrame | None:
    """The query's tokens as the configuration's BM25 analyzer reads them, and which of its
    top ``top`` hits hold each (a token no hit holds adds nothing to their BM25 scores).

    One row per distinct token, in query order. Columns: token (what BM25 matches: for a
    language, the stem), words (the query's words that gave it, as the analyzer split and
    casefolded them), then ``#1`` .. ``#top``: whether that hit's chunk text holds the token.
    None when the configuration reads no BM25 (dense, or a run made elsewhere).
    """
    import pandas as pd

    base, analyzer = split_retriever(configuration.retriever)
    if base not in ANALYZED or info(store, run_id, configuration.strategy, configuration.retriever).source != "builtin":
        return None
    analyze = Analyzer(analyzer)
    text = str(query_row(store, run_id, query_id)["text"])
    found = tokens(text) if not analyzer else words(text)
    gave: dict[str, list[str]] = {}
    for word in found:
        for token in analyze(word) if analyzer else [word]:
            if word not in gave.setdefault(token, []):
                gave[token].append(word)
    chunks = store.query(
        "SELECT h.rank, c.text FROM hits h JOIN chunks c ON c.run_id = h.run_id AND c.strategy = h.strategy "
        "AND c.chunk_id = h.chunk_id WHERE h.run_id = ? AND h.strategy = ? AND h.retriever = ? "
        "AND h.query_id = ? AND h.rank <= ? ORDER BY h.rank",
        [run_id, configuration.strategy, configuration.retriever, query_id, top],
    )
    held = [(int(rank), set(analyze(str(chunk)))) for rank, chunk in zip(chunks["rank"], chunks["text"], strict=True)]
    rows = [
        {"token": token, "words": ", ".join(ws), **{f"#{rank}": token in bag for rank, bag in held}}
        for token, ws in gave.items()
    ]
    return pd.DataFrame(rows, columns=["token", "words", *(f"#{rank}" for rank, _ in held)])


def scored_texts(store: Store, run_id: str, domain: str) -> dict[str, str]:
    """{query id: text} of a run's scored queries of one domain ('in' or 'out'): what the
    gate pairs two runs on."""
    df = store.query("SELECT query_id, text FROM queries WHERE run_id = ? AND domain = ? AND valid", [run_id, domain])
    return dict(zip(df["query_id"].astype(str), df["text"].astype(str), strict=True))
