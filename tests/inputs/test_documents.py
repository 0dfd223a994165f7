"""Documents beyond Markdown end to end: the extractor registry, stamps and staleness, the
extraction cache in the store, page locators in citations and the chunks command, uploads
of PDF and HTML (and zips of them), and a run of the real model over a folder mixing PDF,
HTML and Markdown (tests/real_documents.py makes the files)."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import MINI, ROOT, cli_in_process
from real_documents import markdown_needles

from evalcore import jobs
from evalcore.chunking import chunk_corpus, parse_strategies
from evalcore.errors import InputError
from evalcore.inputs import extract
from evalcore.inputs.corpus import load_corpus
from evalcore.inputs.groundtruth import NeedleIndex
from evalcore.inputs.uploads import UploadedFile
from evalcore.read.citations import Source, build_context, locator, page_range, pages_label
from evalcore.store import Store


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m evalcore ARGS``, run in this process (the model loaded once per session)."""
    return cli_in_process(list(args), {"HF_HUB_OFFLINE": "1"})


# --- registry and stamps ----------------------------------------------------------------------


def test_registry_maps_suffixes_to_extractors_and_stamps():
    assert extract.SOURCE_TYPES == {
        ".md": "markdown",
        ".markdown": "markdown",
        ".txt": "text",
        ".pdf": "pdf",
        ".html": "html",
        ".htm": "html",
    }
    assert extract.extractor_for("A/B.PDF").name == "pdf" and extract.extractor_for("x.htm").name == "html"
    with pytest.raises(InputError, match=r"^x\.docx: not a corpus document"):
        extract.extractor_for("x.docx")
    versions = extract.current_versions()
    assert versions["markdown"] == extract.VERSION == "1" and versions["pydoc-topics"] == "1"
    import lxml
    import pypdfium2

    assert versions["pdf"].endswith(f"pypdfium2-{pypdfium2.version.PYPDFIUM_INFO}")
    assert versions["html"].endswith(f"lxml-{lxml.__version__}")


def test_a_changed_extractor_version_makes_stored_documents_stale(printed, tmp_path, monkeypatch, real_embedder):
    from evalcore.run.runner import RunRequest, run_evaluation

    folder = tmp_path / "corpus"
    folder.mkdir()
    shutil.copy(printed["poetry"].pdf / "libraries.pdf", folder)
    shutil.copy(printed["mkdocs"].html / "getting-started.html", folder)
    shutil.copy(MINI / "corpus" / "install.md", folder)
    store = Store(tmp_path / "s.duckdb")
    corpus = load_corpus(folder, cache=store)
    needle = next(
        n
        for n in markdown_needles((printed["poetry"].markdown / "libraries.md").read_text())
        if len(NeedleIndex(corpus.documents).find(n)) == 1
    )
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q1", "question": needle, "needle": needle}) + "\n")
    from evalcore.inputs.groundtruth import load_ground_truth

    run = run_evaluation(
        RunRequest(corpus, load_ground_truth(corpus, tmp_path / "q.jsonl"), parse_strategies("E"), ["dense"]),
        store,
        embedders=[real_embedder],
    )
    rows = store.query("SELECT doc_id, extractor, extractor_version FROM documents WHERE run_id = ?", [run.run_id])
    assert all(extract.stale_reason(r.extractor, r.extractor_version) is None for r in rows.itertuples())
    new_pdf = dataclasses.replace(extract.EXTRACTORS[".pdf"], version="2+pypdfium2-next")
    monkeypatch.setitem(extract.EXTRACTORS, ".pdf", new_pdf)
    stale = {r.doc_id: extract.stale_reason(r.extractor, r.extractor_version) for r in rows.itertuples()}
    assert stale == {
        "libraries": f"extractor pdf {extract._pdf.VERSION} (now 2+pypdfium2-next)",
        "getting-started": None,
        "install": None,
    }


# --- the extraction cache ---------------------------------------------------------------------


def test_extractions_are_cached_by_file_hash_and_extractor_version(printed, tmp_path, monkeypatch):
    folder = tmp_path / "corpus"
    shutil.copytree(printed["poetry"].pdf, folder)
    shutil.copy(printed["poetry"].html / "faq.html", folder / "faq-page.html")
    shutil.copy(MINI / "corpus" / "install.md", folder)
    store = Store(tmp_path / "s.duckdb")
    first = load_corpus(folder, cache=store)
    cached = store.query("SELECT extractor, count(*) AS n FROM extractions GROUP BY ALL ORDER BY 1")
    assert cached.to_dict("list") == {"extractor": ["html", "pdf"], "n": [1, 16]}  # never Markdown

    calls = []
    for suffix in (".pdf", ".html"):
        spec = extract.EXTRACTORS[suffix]
        counted = dataclasses.replace(
            spec, extract=lambda data, name, f=spec.extract: calls.append(name) or f(data, name)
        )
        monkeypatch.setitem(extract.EXTRACTORS, suffix, counted)
    second = load_corpus(folder, cache=store)
    assert calls == [] and second.documents == first.documents  # page maps and notes included

    changed = printed["mkdocs"].pdf / "index.pdf"
    (folder / "faq.pdf").write_bytes(changed.read_bytes())  # a changed file: new bytes, new hash
    monkeypatch.setitem(extract.EXTRACTORS, ".html", dataclasses.replace(extract.EXTRACTORS[".html"], version="9"))
    third = load_corpus(folder, cache=store)
    assert sorted(calls) == ["faq-page.html", "faq.pdf"]
    assert third.by_id()["faq"].text == extract.extract_file(changed.read_bytes(), "index.pdf")[1].text
    assert int(store.query("SELECT count(*) FROM extractions").iloc[0, 0]) == 19


# --- locators ---------------------------------------------------------------------------------


def test_citations_of_pdf_chunks_give_the_page_and_say_when_they_run_on(printed):
    corpus = load_corpus(printed["poetry"].pdf)
    doc = corpus.by_id()["cli"]
    chunks = chunk_corpus(corpus, parse_strategies("E")[0])
    mine = [c for c in chunks if c.doc_id == "cli"]
    runs_on = next(c for c in mine if doc.page_of(c.start) != doc.page_of(c.end - 1))
    one_page = next(c for c in mine if doc.page_of(c.start) == doc.page_of(c.end - 1))
    sources = [Source.from_chunk(c, doc.title, 0.3, doc.page_starts) for c in (runs_on, one_page)]
    context = build_context("how do I add a dependency?", sources)
    first, last = doc.page_of(runs_on.start), doc.page_of(runs_on.end - 1)
    assert last == first + 1
    c1, c2 = context.citations
    assert (c1.fragment, c1.page, c1.last_page) == (f"#page={first}", first, last)
    assert c1.label == f"{runs_on.section} · pp. {first}-{last}" and c1.quote == runs_on.content
    assert c2.label.endswith(f" · p. {doc.page_of(one_page.start)}") and c2.page == c2.last_page
    assert f"[1] {doc.title} - {c1.label}\n" in context.prompt
    # a document without pages keeps the RFC 5147 range
    plain = Source("d", "D", "S", 10, 13, "abc", 0.2)
    assert build_context("q", [plain]).citations[0].fragment == "#char=10,13"
    assert locator(10, 13) == "#char=10,13" and page_range((), 10, 13) is None
    assert locator(0, 5, (0, 3)) == "#page=1" and page_range((0, 3), 0, 5) == (1, 2)
    assert page_range((0, 3), 3, 4) == (2, 2) and page_range((0, 3), 1, 3) == (1, 1)  # [1, 3) ends on page 1
    assert pages_label(4, 4) == "p. 4" and pages_label(4, 5) == "pp. 4-5"


def test_chunks_command_prints_each_chunks_locator(printed, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(printed["poetry"].pdf / "faq.pdf", folder)
    shutil.copy(printed["mkdocs"].html / "getting-started.html", folder)
    res = run_cli("chunks", "--corpus", str(folder), "--strategy", "E", "-o", str(tmp_path / "c.jsonl"))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    corpus = load_corpus(folder)
    docs = corpus.by_id()
    assert {r["document"] for r in rows} == {"faq", "getting-started"}
    for r in rows:
        d = docs[r["document"]]
        assert d.text[r["from"] : r["to"]] == r["content"]
        if d.source_type == "pdf":
            assert r["locator"] == f"#page={d.page_of(r['from'])}"
            assert r["pages"] == [d.page_of(r["from"]), d.page_of(r["to"] - 1)]
        else:
            assert r["locator"] == f"#char={r['from']},{r['to']}" and r["pages"] is None
    assert any(r["pages"] and r["pages"][1] > r["pages"][0] for r in rows)


# --- uploads ----------------------------------------------------------------------------------


def test_upload_of_pdf_html_and_a_zip_of_them(printed, tmp_path):
    store = Store(tmp_path / "runs" / "evalcore.duckdb")
    store.migrate()
    pdf = (printed["poetry"].pdf / "libraries.pdf").read_bytes()
    page = (printed["mkdocs"].html / "getting-started.html").read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("docs/faq.pdf", (printed["poetry"].pdf / "faq.pdf").read_bytes())
        zf.writestr("docs/install.htm", (printed["mkdocs"].html / "user-guide/installation.html").read_bytes())
        zf.writestr("docs/locked.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 40)
    files = [
        UploadedFile("libraries.pdf", pdf),
        UploadedFile("getting-started.html", page),
        UploadedFile("corpus.zip", buf.getvalue()),
    ]
    needle = next(n for n in markdown_needles((printed["poetry"].markdown / "libraries.md").read_text()))
    questions = UploadedFile(
        "questions.jsonl", (json.dumps({"id": "q", "question": "x", "needle": needle}) + "\n").encode()
    )
    prepared = jobs.prepare_upload(store, files, questions, None, "A", "dense")
    assert prepared.skipped == (
        "corpus.zip: docs/locked.pdf: not a readable PDF (corrupt or truncated: "
        "PDFium finds a data format error); skipped",
    )
    assert prepared.report.to_json()["documents"] == 4
    saved = sorted(p.relative_to(prepared.spec.corpus).as_posix() for p in Path(prepared.spec.corpus).rglob("*.*"))
    # the zip holds one top folder (docs/): its files are read from inside it (issue 20, item 6)
    assert saved == ["faq.pdf", "getting-started.html", "install.htm", "libraries.pdf"]


def test_new_run_page_uploader_accepts_the_new_suffixes():
    source = (ROOT / "evalcore_app" / "screens" / "new_run.py").read_text()
    for suffix in ("pdf", "html", "htm"):
        assert f'"{suffix}"' in source


# --- a mixed folder, end to end with the real model --------------------------------------------


def test_a_folder_mixing_pdf_html_and_markdown_evaluates_end_to_end(printed, tmp_path, capsys):
    folder = tmp_path / "mixed"
    folder.mkdir()
    for name in ("basic-usage", "faq", "libraries"):
        shutil.copy(printed["poetry"].pdf / f"{name}.pdf", folder)
    for name in ("getting-started", "user-guide/choosing-your-theme", "user-guide/deploying-your-docs"):
        shutil.copy(printed["mkdocs"].html / f"{name}.html", folder)
    for path in (MINI / "corpus").iterdir():
        shutil.copy(path, folder)
    (folder / "scanned.pdf").write_bytes(b"%PDF-1.4 truncated")
    corpus = load_corpus(folder)
    index = NeedleIndex(corpus.documents)
    lines = [json.loads(line) for line in (MINI / "questions.jsonl").read_text().splitlines() if line.strip()]
    sources = {
        "basic-usage": printed["poetry"],
        "faq": printed["poetry"],
        "libraries": printed["poetry"],
        "getting-started": printed["mkdocs"],
        "choosing-your-theme": printed["mkdocs"],
        "deploying-your-docs": printed["mkdocs"],
    }
    for doc_id, printed_corpus in sources.items():
        md = next(printed_corpus.markdown.rglob(f"{doc_id}.md")).read_text(encoding="utf-8")
        picked = [n for n in markdown_needles(md) if len(index.find(n)) == 1][:3]
        assert len(picked) == 3, doc_id
        lines += [
            {"id": f"{doc_id}-{i}", "question": " ".join(n.split()[:12]), "needle": n} for i, n in enumerate(picked)
        ]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    store = tmp_path / "runs.duckdb"
    res = run_cli(
        "--store",
        str(store),
        "run",
        "--corpus",
        str(folder),
        "--questions",
        str(tmp_path / "questions.jsonl"),
        "--ood",
        str(MINI / "ood.jsonl"),
        "--strategies",
        "A,E",
        "--retrievers",
        "dense,bm25,hybrid",
        "--name",
        "mixed",
        "-q",
    )
    assert res.returncode == 0, res.stderr
    assert "recall@" in res.stdout
    s = Store(store)
    docs = s.query("SELECT doc_id, source_type, state, reason, pages, page_starts FROM documents ORDER BY doc_id")
    assert sorted(set(docs["source_type"].dropna())) == ["html", "markdown", "pdf"]
    failed = docs[docs["state"] == "failed"]
    assert failed["doc_id"].tolist() == ["scanned"] and "not a readable PDF" in failed["reason"].iloc[0]
    pdfs = docs[docs["source_type"] == "pdf"]
    assert (pdfs["pages"] == [len(p) for p in pdfs["page_starts"]]).all()
    assert int(s.query("SELECT count(*) FROM extractions").iloc[0, 0]) == 6
    invalid = s.query("SELECT group_id FROM queries WHERE domain = 'in' AND NOT valid")
    assert invalid["group_id"].tolist() == ["missing"]  # the mini set's deliberate one: ours all resolved
    check_the_query_screen_cites_pages(store, s)
    with capsys.disabled():
        print("\n" + res.stdout)


def check_the_query_screen_cites_pages(path, store) -> None:
    """The read side cites a PDF chunk by page (#page=N, N the page of its first character,
    from the stored page map) and the Query screen shows the page numbers."""
    import bisect

    import pytest

    from evalcore.read import queries
    from evalcore.read.index import documents
    from evalcore.records import Configuration

    run_id = store.query("SELECT run_id FROM runs WHERE name = 'mixed'").iloc[0, 0]
    maps = {
        d: list(p)
        for d, p in store.query(
            "SELECT doc_id, page_starts FROM documents WHERE source_type = 'pdf' AND state = 'indexed'"
        ).values
    }
    question = queries.query_row(store, run_id, "basic-usage-0")
    page = bisect.bisect_right(maps["basic-usage"], int(question["start"]))
    assert question["needle_locator"] == f"#page={page}"
    e_hybrid = Configuration("E", "hybrid")
    hits = queries.query_hits(store, run_id, "basic-usage-0", e_hybrid)
    pdf = hits[hits["doc_id"].isin(list(maps))]
    assert len(pdf)
    for h in pdf.itertuples():
        first, last = (bisect.bisect_right(maps[h.doc_id], x) for x in (int(h.start), int(h.end) - 1))
        assert h.locator == f"#page={first}"
        assert h.pages == (f"p. {first}" if first == last else f"pp. {first}-{last}")
    text = hits[~hits["doc_id"].isin(list(maps))]
    assert all(loc == f"#char={a},{b}" for loc, a, b in zip(text["locator"], text["start"], text["end"], strict=True))
    answer = queries.query_answer(store, run_id, "basic-usage-0", e_hybrid, threshold=2.0, count=False)
    cited = answer.citations[answer.citations["doc_id"].isin(list(maps))]
    assert len(cited) and all(
        src == f"{doc}.pdf{frag}" and frag.startswith("#page=")
        for src, doc, frag in zip(cited["source"], cited["doc_id"], cited["fragment"], strict=True)
    )
    docs = documents(store, run_id)
    assert docs.set_index("doc_id").loc["basic-usage", "pages"] == len(maps["basic-usage"])
    assert not docs["stale"].any()

    from dashboard.test_app import open_page

    with pytest.MonkeyPatch.context() as mp:
        at = open_page(path, "query", mp, query_id="basic-usage-0", config="E/hybrid")
    assert not at.exception, [e.value for e in at.exception]
    shown = [df.value for df in at.dataframe]
    assert any("pages" in df.columns and df["pages"].str.startswith("p").any() for df in shown)
