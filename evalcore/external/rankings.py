"""Ranking files of runs made elsewhere: TREC, JSONL, and ranx / BEIR JSON.

Formats (detected from the content; ``fmt`` overrides):

- **TREC** run file: one hit a line, ``query_id Q0 chunk_id rank score tag`` (whitespace
  separated, six fields), as trec_eval, pytrec_eval and ranx read it.
- **JSONL**: one query a line, ``{"query": ID, "hits": [{"chunk": ID, "score": S}, ...]}``
  with the hits in rank order.
- **JSON** (ranx ``Run.save("run.json")``, BEIR results): one object
  ``{query_id: {chunk_id: score, ...}, ...}``; the order comes from the scores alone.

A query's hits are ranked by score in the score's direction (``similarity``: higher first;
``distance``: lower first), ties kept in the order the file gives (TREC: by its rank column,
then file order). Where a file gives its own order (TREC ranks, the JSONL hit list), that
order must agree with the scores: a disagreement usually means the score kind is the other
one, and it is an error naming the line rather than a silent reversal.

Every problem (unparsable line, a score that is not a finite number, a chunk given twice for
one query) is an InputError naming the file and line (for JSON, the query and chunk).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, Any

from evalcore.configurations import score_kind
from evalcore.errors import InputError
from evalcore.external.hits import BadHits, finite_number
from evalcore.inputs import jsontext
from evalcore.inputs.groundtruth import read_jsonl

FORMATS = ("trec", "jsonl", "json")
MAX_RANK = 10**9  # a TREC rank beyond this is a damaged file


@dataclass(frozen=True, slots=True)
class Line:
    """``FILE:LINE`` of a hit, formatted only when a message names it (a TREC file of a
    million lines would otherwise hold a million such strings)."""

    path: str
    number: int

    def __str__(self) -> str:
        return f"{self.path}:{self.number}"


@dataclass(frozen=True, slots=True)
class RankedHit:
    """One hit of a ranking file: the chunk's own id, its score, and where it was read."""

    chunk: str
    score: float
    where: str | Line


@dataclass(frozen=True, slots=True)
class QueryHits:
    """One query's hits in rank order, column by column: a TREC file of a million lines is a
    few arrays (about 24 bytes a hit, the ids interned), not a million objects. ``origin``:
    each hit's line number in ``path`` (an array), or where it was read, in words (a list)."""

    path: str
    chunks: list[str]
    scores: array[float]
    origin: array[int] | list[str]

    def __len__(self) -> int:
        return len(self.chunks)

    def where(self, i: int) -> str:
        """``FILE:LINE`` (or the JSON key) of hit ``i``, for a message."""
        found = self.origin[i]
        return f"{self.path}:{found}" if isinstance(found, int) else found

    def __iter__(self) -> Iterator[RankedHit]:
        for i, chunk in enumerate(self.chunks):
            yield RankedHit(chunk, self.scores[i], self.where(i))


@dataclass(frozen=True, slots=True)
class RankingFile:
    """The hits per query (in rank order), the format read, and the run tags (TREC)."""

    path: str
    format: str
    hits: dict[str, QueryHits]
    where: dict[str, str]  # query id -> where its hits start (FILE:LINE), for messages
    tags: tuple[str, ...] = ()


def _score(value: Any, where: str) -> float:

    try:
        return finite_number(value, "score")
    except BadHits as exc:
        raise InputError(f"{where}: {exc}") from None


def _key(value: Any, where: str, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise InputError(f"{where}: {what} must be a non-empty string or integer, got {value!r}")
    return str(value)


def detect(path: Path) -> str:
    """``trec``, ``jsonl`` or ``json`` from the first non-blank characters of ``path``."""
    with open(path, encoding="utf-8-sig", errors="replace") as fh:  # the reader names a bad byte's line
        head = fh.read(4096).lstrip()
    if not head:
        raise InputError(f"{path}: the rankings file is empty")
    if head.startswith("{"):
        first_line = head.split("\n", 1)[0].strip()
        try:
            obj = jsontext.loads(first_line)
        except json.JSONDecodeError:
            return "json"  # an object over several lines
        return "jsonl" if isinstance(obj, dict) and "hits" in obj else "json"
    return "trec"


# (hit, the rank the file gives, its position in the file)
_Raw = list[tuple[RankedHit, float, int]]  # the given rank (an int in TREC files)


def _order(hits: _Raw, higher_first: bool, kind: str, given_order: bool) -> list[RankedHit]:
    """Hits sorted by score (direction ``higher_first``), ties by the given rank, then file
    order; when ``given_order``, two hits whose given ranks and scores disagree are an error."""
    sign = -1.0 if higher_first else 1.0
    ranked = sorted(hits, key=lambda h: (sign * h[0].score, h[1], h[2]))
    if given_order:
        by_given = sorted(hits, key=lambda h: (h[1], h[2]))
        for (a, ra, _), (b, rb, _) in pairwise(by_given):
            if ra != rb and sign * a.score > sign * b.score:
                better = "higher" if higher_first else "lower"
                raise InputError(
                    f"{b.where}: ranked after {a.chunk!r} but its score {b.score:g} is {better} than "
                    f"{a.score:g}; with --score {kind} a {better} score ranks first (is the score "
                    f"a {'distance' if higher_first else 'similarity'}?)"
                )
    return [h for h, _, _ in ranked]


if TYPE_CHECKING:
    #: One query's hits of a TREC file as read: chunk ids, given ranks, scores, line numbers.
    _Columns = tuple[list[str], array[int], array[float], array[int]]


def _read_trec(path: Path) -> tuple[dict[str, _Columns], dict[str, str], list[str]]:
    """Streamed line by line into columns per query (:data:`_Columns`); query ids, chunk ids
    and tags are interned (each is held once however often the file repeats it), so memory
    grows by some 32 bytes a hit, not by the hit's text or a Python object per hit."""

    per_query: dict[str, _Columns] = {}
    starts: dict[str, str] = {}
    tags: list[str] = []
    with open(path, "rb") as fh:
        for number, data in enumerate(fh, start=1):
            try:
                line = data.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{path}:{number}: not UTF-8 text (byte offset {exc.start}: {exc.reason})") from None
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 6:
                raise InputError(
                    f"{path}:{number}: a TREC run line has 6 fields (query_id Q0 chunk_id rank score tag), "
                    f"got {len(parts)}"
                )
            qid, _q0, chunk, rank_text, score_text, tag = parts
            try:
                rank = int(rank_text)
            except ValueError:
                raise InputError(f"{path}:{number}: rank must be an integer, got {rank_text[:40]!r}") from None
            if abs(rank) > MAX_RANK:
                raise InputError(f"{path}:{number}: rank {rank_text[:20]}... is out of range (at most {MAX_RANK:,})")
            score = _score(score_text, f"{path}:{number}")
            qid = intern(qid)
            columns = per_query.get(qid)
            if columns is None:
                starts[qid] = f"{path}:{number}"
                columns = per_query[qid] = ([], array("q"), array("d"), array("q"))
            columns[0].append(intern(chunk))
            columns[1].append(rank)
            columns[2].append(score)
            columns[3].append(number)
            if tag not in tags:
                tags.append(intern(tag))
    for qid, (chunks, _, _, numbers) in per_query.items():  # a chunk twice for one query: named at its second line
        first: dict[str, int] = {}
        for chunk, number in zip(chunks, numbers, strict=True):
            if chunk in first:
                raise InputError(
                    f"{path}:{number}: chunk {chunk!r} ranked twice for query {qid!r} (first at {path}:{first[chunk]})"
                )
            first[chunk] = number
    return per_query, starts, tags


def _order_columns(path: str, columns: _Columns, higher_first: bool, kind: str) -> QueryHits:
    """:func:`_order` of one TREC query's columns: by score, ties by the given rank, then line;
    the given ranks must agree with the scores."""
    chunks, ranks, scores, numbers = columns
    sign = -1.0 if higher_first else 1.0
    by_given = sorted(range(len(chunks)), key=lambda i: (ranks[i], numbers[i]))
    for a, b in pairwise(by_given):
        if ranks[a] != ranks[b] and sign * scores[a] > sign * scores[b]:
            better = "higher" if higher_first else "lower"
            raise InputError(
                f"{path}:{numbers[b]}: ranked after {chunks[a]!r} but its score {scores[b]:g} is {better} than "
                f"{scores[a]:g}; with --score {kind} a {better} score ranks first (is the score "
                f"a {'distance' if higher_first else 'similarity'}?)"
            )
    del by_given
    order = sorted(range(len(chunks)), key=lambda i: (sign * scores[i], ranks[i], numbers[i]))
    return QueryHits(
        path,
        [chunks[i] for i in order],
        array("d", (scores[i] for i in order)),
        array("q", (numbers[i] for i in order)),
    )


def _read_jsonl_hits(path: Path) -> tuple[dict[str, _Raw], dict[str, str]]:

    per_query: dict[str, _Raw] = {}
    starts: dict[str, str] = {}
    for number, obj in read_jsonl(path):
        where = f"{path}:{number}"
        if "query" not in obj:
            raise InputError(f"{where}: missing field 'query'")
        qid = _key(obj["query"], where, "field 'query'")
        if qid in per_query:
            raise InputError(f"{where}: query {qid!r} given twice (first at {starts[qid]})")
        hits = obj.get("hits")
        if not isinstance(hits, list):
            raise InputError(f'{where}: field \'hits\' must be a list of {{"chunk": ID, "score": S}}, got {hits!r}')
        seen: set[str] = set()
        out = []
        for i, hit in enumerate(hits, start=1):
            at = f"{where}: hit {i}"
            if not isinstance(hit, dict) or "chunk" not in hit or "score" not in hit:
                raise InputError(f"{at} must be an object with 'chunk' and 'score', got {hit!r}")
            chunk = _key(hit["chunk"], at, "'chunk'")
            if chunk in seen:
                raise InputError(f"{at}: chunk {chunk!r} ranked twice for query {qid!r}")
            seen.add(chunk)
            out.append((RankedHit(chunk, _score(hit["score"], at), at), float(i), i))
        per_query[qid] = out
        starts[qid] = where
    return per_query, starts


def _read_json(path: Path) -> tuple[dict[str, _Raw], dict[str, str]]:
    try:
        obj = jsontext.loads(path.read_text(encoding="utf-8-sig"), unique_keys=True)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except jsontext.DuplicateKey as exc:
        raise InputError(
            f"{path}: {exc.key!r} is given twice in one object (a query, or a chunk of one query, given twice: "
            "the last value would silently win)"
        ) from None
    if not isinstance(obj, dict):
        raise InputError(f"{path}: expected a JSON object {{query_id: {{chunk_id: score}}}}, got {type(obj).__name__}")
    per_query: dict[str, _Raw] = {}
    starts: dict[str, str] = {}
    for qid, ranking in obj.items():
        at = f"{path}: query {qid!r}"
        if not isinstance(ranking, dict):
            raise InputError(f"{at}: expected an object {{chunk_id: score}}, got {ranking!r}")
        per_query[qid] = [
            (RankedHit(chunk, _score(score, f"{at}, chunk {chunk!r}"), f"{at}, chunk {chunk!r}"), 0.0, i)
            for i, (chunk, score) in enumerate(ranking.items())
        ]
        starts[qid] = at
    return per_query, starts


def read_rankings(path: str | Path, kind: str = "similarity", fmt: str | None = None) -> RankingFile:
    """Read ``path`` (format detected unless ``fmt``) and rank each query's hits (see the
    module docstring). ``kind`` is ``similarity`` (higher first) or ``distance``."""

    path = Path(path)
    kind = score_kind(kind)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    fmt = fmt or detect(path)
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown rankings format {fmt!r}; known: {', '.join(FORMATS)}")
    tags: list[str] = []
    higher_first = kind == "similarity"
    hits: dict[str, QueryHits] = {}
    try:
        if fmt == "trec":
            columns, starts, tags = _read_trec(path)
            while columns:  # one query at a time: its read columns are freed as its ordered ones are made
                qid = next(iter(columns))
                hits[qid] = _order_columns(str(path), columns.pop(qid), higher_first, kind)
        else:
            raw, starts = _read_jsonl_hits(path) if fmt == "jsonl" else _read_json(path)
            for q, h in raw.items():
                ranked = _order(h, higher_first, kind, given_order=fmt != "json")
                hits[q] = QueryHits(
                    str(path),
                    [x.chunk for x in ranked],
                    array("d", (x.score for x in ranked)),
                    [str(x.where) for x in ranked],
                )
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    if not hits:
        raise InputError(f"{path}: no rankings")
    return RankingFile(str(path), fmt, hits, starts, tuple(tags))
