"""Which PDF text extractor: fidelity and speed of the candidates, side by side on real PDFs.

    python benchmarks/bench_pdf.py [--keep DIR]

PDFs: the poetry and mkdocs documentation (../shared/data) rendered to HTML and printed by
Debian's chromium exactly as the tests do (tests/real_documents.py: poetry with the
browser's header and footer, mkdocs with an outline), plus the TeX manuals Debian ships
when installed (libtasn1-doc, shared-mime-info). Candidates (licences in the table):
PDFium through pypdfium2 (raw text, and our extractor built on it), pypdf, pdfminer.six,
pdfplumber; poppler's pdftotext (GPL, a program: a reference, not a candidate).

Figures per candidate:
- ms/page: wall time to get every page's text, all PDFs, one process, one after another;
- needles: sentences of the Markdown source (no Markdown syntax in them) found in the
  text of the same document, whitespace runs matching any whitespace (our needle rule):
  words, their order and the reading order all have to be right;
- header/footer: pages whose text still holds the browser's date or file URL (poetry);
- TeX: U+FB00..FB06 ligature characters, words split by a line-end hyphen ("-" then a
  line break then a lowercase letter) and word F1 against pdftotext on the TeX manuals.
Candidates that are not installed are listed as such.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DATA = (ROOT / ".." / "shared" / "data").resolve()
TEX = [
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
]


# --- candidates: path -> list of page texts -----------------------------------------------------


def pdfium_raw(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    try:
        out = []
        for page in doc:
            tp = page.get_textpage()
            out.append(tp.get_text_range().replace("\r\n", "\n"))
            tp.close()
            page.close()
        return out
    finally:
        doc.close()


def evalcore_pdf(path: Path) -> list[str]:
    from evalcore.inputs.extractors import pdf

    x = pdf.extract(path.read_bytes(), path.name)
    ends = [s - 2 for s in x.page_starts[1:]] + [len(x.text)]
    return [x.text[s:e] for s, e in zip(x.page_starts, ends, strict=True)]


def pypdf_pages(path: Path) -> list[str]:
    import pypdf

    return [p.extract_text() or "" for p in pypdf.PdfReader(str(path)).pages]


def pdfminer_pages(path: Path) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        "".join(el.get_text() for el in page if isinstance(el, LTTextContainer)) for page in extract_pages(str(path))
    ]


def pdfplumber_pages(path: Path) -> list[str]:
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        return [p.extract_text() or "" for p in pdf.pages]


def pdftotext_pages(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    return out.split("\f")[:-1] if out.endswith("\f") else out.split("\f")


CANDIDATES = [
    ("evalcore pdf (PDFium + our rules)", "pypdfium2", "Apache-2.0/BSD-3", evalcore_pdf),
    ("pypdfium2 raw text", "pypdfium2", "Apache-2.0/BSD-3", pdfium_raw),
    ("pypdf", "pypdf", "BSD-3", pypdf_pages),
    ("pdfminer.six", "pdfminer", "MIT", pdfminer_pages),
    ("pdfplumber", "pdfplumber", "MIT", pdfplumber_pages),
    ("pdftotext (poppler, reference)", None, "GPL-2 (program)", pdftotext_pages),
]


# --- inputs ----------------------------------------------------------------------------------


def make_pdfs(out: Path):
    from playwright.sync_api import sync_playwright
    from real_documents import CHROMIUM, print_corpus

    if not CHROMIUM:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            return [
                print_corpus(browser, "poetry", DATA / "poetry-docs" / "docs", out, header_footer=True, outline=False),
                print_corpus(
                    browser,
                    "mkdocs",
                    DATA / "mkdocs-docs" / "docs",
                    out,
                    header_footer=False,
                    outline=True,
                    skip=("about/release-notes.md",),
                ),
            ]
        finally:
            browser.close()


WORD = re.compile(r"\w+")


def word_f1(ours: str, reference: str) -> float:
    a, b = Counter(WORD.findall(ours.lower())), Counter(WORD.findall(reference.lower()))
    common = sum((a & b).values())
    if not common:
        return 0.0
    p, r = common / sum(a.values()), common / sum(b.values())
    return 2 * p * r / (p + r)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", type=Path, default=None, help="write the PDFs here (default: a temporary folder)")
    args = ap.parse_args()
    if not (DATA / "poetry-docs").exists():
        raise SystemExit(f"{DATA} is not present")
    from real_documents import markdown_needles

    from evalcore.inputs.groundtruth import NeedleIndex
    from evalcore.records import Document

    tmp = Path(tempfile.mkdtemp(prefix="bench-pdf-")) if args.keep is None else args.keep
    t0 = time.perf_counter()
    corpora = make_pdfs(tmp)
    print(f"printed {sum(len(c.doc_ids()) for c in corpora)} PDFs with chromium in {time.perf_counter() - t0:.1f} s")
    files = [(c, doc_id, c.pdf / f"{doc_id}.pdf") for c in corpora for doc_id in c.doc_ids()]
    tex = [p for p in TEX if p.exists()]
    reference_tex = {p: "\n".join(pdftotext_pages(p)) for p in tex} if shutil.which("pdftotext") else {}
    needles = {(c.name, d): markdown_needles((c.markdown / f"{d}.md").read_text(encoding="utf-8")) for c, d, _ in files}
    pages_total = 0
    rows = []
    for label, module, licence, fn in CANDIDATES:
        if module is not None:
            try:
                __import__(module)
            except ImportError:
                rows.append((label, licence, "not installed", "", "", "", "", "", ""))
                continue
        elif not shutil.which("pdftotext"):
            rows.append((label, licence, "not installed", "", "", "", "", "", ""))
            continue
        t = time.perf_counter()
        texts = {(c.name, d): fn(path) for c, d, path in files}
        tex_texts = {p: fn(p) for p in tex}
        seconds = time.perf_counter() - t
        pages = sum(len(v) for v in texts.values()) + sum(len(v) for v in tex_texts.values())
        pages_total = max(pages_total, pages)
        found = total = 0
        for corpus in corpora:
            docs = tuple(
                Document(d, d, "pdf", "\n\n".join(texts[(corpus.name, d)]), "bench", "0") for d in corpus.doc_ids()
            )
            index = NeedleIndex(docs)
            for d in corpus.doc_ids():
                for n in needles[(corpus.name, d)]:
                    total += 1
                    found += any(o.doc_id == d for o in index.find(n))
        url = corpora[0].html.as_uri()
        poetry_pages = [p for (name, _), v in texts.items() if name == "poetry" for p in v]
        running = sum(url in p or bool(re.search(r"\d+/\d+/\d+, \d+:\d+ [AP]M", p)) for p in poetry_pages)
        if tex:
            joined = {p: "\n".join(v) for p, v in tex_texts.items()}
            ligatures = sum(len(re.findall("[\ufb00-\ufb06]", t)) for t in joined.values())
            hyphens = sum(len(re.findall(r"[a-z]-\n[a-z]", t)) for t in joined.values())
            f1 = (sum(word_f1(joined[p], reference_tex[p]) for p in tex) / len(tex)) if reference_tex else float("nan")
            tex_cells = (str(ligatures), str(hyphens), f"{f1:.3f}")
        else:
            tex_cells = ("-", "-", "-")
        rows.append(
            (
                label,
                licence,
                f"{1000 * seconds / pages:.1f}",
                f"{found}/{total} ({found / total:.1%})",
                f"{running}/{len(poetry_pages)}",
                *tex_cells,
                f"{seconds:.2f}",
            )
        )
    head = (
        "candidate",
        "licence",
        "ms/page",
        "needles resolved",
        "hdr/ftr pages",
        "ligatures",
        "-\\n splits",
        "word F1 vs pdftotext",
        "seconds",
    )
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    print(
        f"\n{len(files)} chromium PDFs ({sum(len(v) for v in needles.values())} Markdown needles) "
        f"+ {len(tex)} TeX manuals; {pages_total} pages per candidate\n"
    )
    for r in [head, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
    if args.keep is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
