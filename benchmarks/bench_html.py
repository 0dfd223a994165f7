"""Which HTML main-content extractor: fidelity and speed of the candidates on real pages.

    python benchmarks/bench_html.py

Pages:
- **site**: the poetry and mkdocs documentation (../shared/data) rendered into a site
  template with navigation, sidebar, footer and script (tests/real_documents.py); the
  truth is the Markdown source;
- **node**: Node.js's API documentation as Debian ships it (/usr/share/doc/nodejs/api, a
  page per module with its Markdown source beside it; no <main>: the module list is a
  sidebar of links), when installed;
- **mdbook**: The Rust Programming Language as rustup installs it (mdBook pages: <main>
  plus a sidebar with every chapter's title), when installed.

Figures per candidate: ms/page; needles = sentences of the Markdown source found in the
text (whitespace-tolerant, our needle rule); leaked = boilerplate found in the text
(site: the template's navigation, footer and script strings; node and mdbook: sidebar
link texts that the page's own content never uses).
Candidates: evalcore html (lxml + our rules), trafilatura, readability-lxml, and the
whole page's text (BeautifulSoup get_text, no main-content rule) as the floor.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DATA = (ROOT / ".." / "shared" / "data").resolve()
NODE = Path("/usr/share/doc/nodejs/api")
MDBOOK = (
    next(iter(sorted(Path("/root/.rustup/toolchains").glob("*/share/doc/rust/html/book"))), None)
    if Path("/root/.rustup/toolchains").exists()
    else None
)


def evalcore_html(data: bytes) -> str:
    from evalcore.inputs.extractors import html

    return html.extract(data, "page.html").text


def trafilatura_text(data: bytes) -> str:
    import trafilatura

    return (
        trafilatura.extract(
            data.decode("utf-8", "replace"), include_comments=False, include_tables=True, favor_recall=True
        )
        or ""
    )


def readability_text(data: bytes) -> str:
    import lxml.html
    from readability import Document

    summary = Document(data.decode("utf-8", "replace")).summary(html_partial=True)
    return lxml.html.fromstring(summary).text_content()


def whole_page(data: bytes) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(data, "lxml")
    for el in soup(["script", "style", "noscript", "template"]):
        el.decompose()
    return soup.get_text("\n")


CANDIDATES = [
    ("evalcore html (lxml + our rules)", "lxml", "BSD-3", evalcore_html),
    ("trafilatura", "trafilatura", "Apache-2.0", trafilatura_text),
    ("readability-lxml", "readability", "Apache-2.0", readability_text),
    ("whole page (BeautifulSoup)", "bs4", "MIT", whole_page),
]


def site_pages(tmp: Path):
    """(set, page bytes, markdown text, boilerplate strings) of the rendered documentation."""
    from real_documents import BOILERPLATE, render_page

    for project, folder in (("poetry", DATA / "poetry-docs" / "docs"), ("mkdocs", DATA / "mkdocs-docs" / "docs")):
        files = sorted(folder.rglob("*.md"))
        rels = [p.relative_to(folder).with_suffix("").as_posix() for p in files]
        for path, rel in zip(files, rels, strict=True):
            raw = path.read_text(encoding="utf-8")
            yield "site", render_page(raw, rel, project, rels).encode("utf-8"), raw, BOILERPLATE


def _links(root, xpath: str) -> list[str]:
    return [" ".join(a.text_content().split()) for el in root.xpath(xpath) for a in el.iter("a")]


def node_pages():
    import lxml.html

    if not NODE.exists():
        return
    for page in sorted(NODE.glob("*.html")):
        md = page.with_suffix(".md")
        if not md.exists() or page.stat().st_size > 400_000:
            continue
        data = page.read_bytes()
        root = lxml.html.fromstring(data)
        source = md.read_text(encoding="utf-8")
        leaks = [t for t in _links(root, "//*[@id='column2']") if len(t) > 6 and t not in source]
        yield "node", data, source, tuple(leaks)


def mdbook_pages():
    import lxml.html

    if MDBOOK is None:
        return
    for page in sorted(MDBOOK.glob("ch0*.html"))[:40]:
        data = page.read_bytes()
        root = lxml.html.fromstring(data)
        main = " ".join(root.xpath("//main")[0].text_content().split()) if root.xpath("//main") else ""
        leaks = [
            t
            for t in _links(root, "//nav[@id='sidebar'] | //*[contains(@class,'sidebar')]")
            if len(t) > 12 and t not in main
        ]
        yield "mdbook", data, main, tuple(leaks[:40])


def main() -> int:
    from real_documents import markdown_needles

    from evalcore.inputs.groundtruth import NeedleIndex
    from evalcore.records import Document

    with tempfile.TemporaryDirectory() as tmp:
        pages = list(site_pages(Path(tmp))) + list(node_pages()) + list(mdbook_pages())
    sets = sorted({p[0] for p in pages}, key=["site", "node", "mdbook"].index)
    counts = {s: sum(p[0] == s for p in pages) for s in sets}
    print("pages: " + ", ".join(f"{s} {n}" for s, n in counts.items()))
    rows = []
    for label, module, licence, fn in CANDIDATES:
        try:
            __import__(module)
        except ImportError:
            rows.append((label, licence, "not installed") + ("",) * len(sets) * 2)
            continue
        t = time.perf_counter()
        texts = []
        for _, data, _, _ in pages:
            try:
                texts.append(fn(data))
            except Exception:  # noqa: BLE001 - a candidate's failure is a figure too
                texts.append("")
        seconds = time.perf_counter() - t
        cells = []
        for s in sets:
            found = total = leaked = leaks_total = 0
            for (kind, _, source, leaks), text in zip(pages, texts, strict=True):
                if kind != s:
                    continue
                flat = " ".join(text.split())
                leaked += sum(1 for b in leaks if b in flat)
                leaks_total += len(leaks)
                if kind == "mdbook":
                    needles = [m.group() for m in re.finditer(r"[A-Z][^.!?]{30,200}[.!?](?= )", source)][:30]
                else:
                    needles = markdown_needles(source)
                index = NeedleIndex((Document("d", "d", "html", text, "bench", "0"),))
                total += len(needles)
                found += sum(bool(index.find(n)) for n in needles)
            cells += [f"{found / total:.1%}" if total else "-", f"{leaked}/{leaks_total}"]
        rows.append((label, licence, f"{1000 * seconds / len(pages):.1f}", *cells))
    head = ("candidate", "licence", "ms/page", *[f"{s} {w}" for s in sets for w in ("needles", "leaked")])
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    print()
    for r in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
