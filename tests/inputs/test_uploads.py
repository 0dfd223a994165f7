"""Bad uploads: each is skipped or refused with a message naming the file (and line), and
neither the run store nor the uploads folder changes. Good uploads are saved and validate
exactly as the same files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MINI
from zips import deflated_zeros, lying_zip, make_zip

from evalcore import jobs
from evalcore.errors import InputError
from evalcore.inputs import uploads
from evalcore.inputs.uploads import Limits, UploadedFile
from evalcore.store import Store, reading

TABLES = ("runs", "jobs", "documents", "queries", "results", "hits", "embeddings")


def mini_files() -> list[UploadedFile]:
    return [UploadedFile(p.name, p.read_bytes()) for p in sorted((MINI / "corpus").iterdir())]


def questions() -> UploadedFile:
    return UploadedFile("questions.jsonl", (MINI / "questions.jsonl").read_bytes())


def ood() -> UploadedFile:
    return UploadedFile("ood.jsonl", (MINI / "ood.jsonl").read_bytes())


@pytest.fixture()
def store(tmp_path) -> Store:
    s = Store(tmp_path / "runs" / "evalcore.duckdb")
    s.migrate()
    return s


def snapshot(store: Store) -> tuple:
    with reading():  # one read connection for the tables' counts
        counts = tuple(int(store.query(f"SELECT count(*) FROM {t}").iloc[0, 0]) for t in TABLES)
    folder = jobs.uploads_dir(store)
    return counts, sorted(p.as_posix() for p in folder.rglob("*")) if folder.exists() else []


def refused(store: Store, corpus, q=None, o=None, limits: Limits | None = None) -> str:
    before = snapshot(store)
    with pytest.raises(InputError) as exc:
        jobs.prepare_upload(store, corpus, q or questions(), o, "A", "dense", limits)
    assert snapshot(store) == before
    return str(exc.value)


# --- corpus documents: skipped with a message naming the file ---------------------------------


def test_bad_documents_are_skipped_with_their_reason_and_the_rest_goes_on(store):
    latin1 = "Café au lait\n".encode("latin-1")
    bad_offset = latin1.decode("utf-8", errors="replace").index("\ufffd")  # independent: first bad byte
    files = [
        *mini_files(),
        UploadedFile("latin.md", latin1),
        UploadedFile("blob.txt", b"ab\0cd"),
        UploadedFile("empty.md", b""),
        UploadedFile("report.pdf", b"%PDF-1.4"),
        UploadedFile("notes.docx", b"PK\x03\x04"),
    ]
    before = snapshot(store)
    prepared = jobs.prepare_upload(store, files, questions(), ood(), "A", "dense")
    assert snapshot(store)[0] == before[0]  # the store is not written before a job is submitted
    skipped = "\n".join(prepared.skipped)
    assert f"latin.md: not valid UTF-8 (byte offset {bad_offset}" in skipped
    assert "blob.txt: binary file (NUL byte at offset 2)" in skipped
    assert "empty.md: empty file" in skipped
    assert "report.pdf: not a readable PDF" in skipped
    assert "notes.docx: not a corpus document" in skipped
    assert prepared.report.to_json()["documents"] == 4  # the four good files, as on disk
    saved = sorted(p.name for p in Path(prepared.spec.corpus).iterdir())
    assert saved == sorted(p.name for p in (MINI / "corpus").iterdir())


def test_a_corpus_of_only_bad_files_is_refused_naming_each(store):
    msg = refused(store, [UploadedFile("a.md", b"\xff\xfe"), UploadedFile("b.md", b"")])
    assert "no usable corpus document" in msg and "a.md: not valid UTF-8" in msg and "b.md: empty file" in msg


# --- jsonl files: refused with FILE:LINE ----------------------------------------------------------


def test_malformed_json_line_is_refused_with_file_and_line(store):
    lines = (MINI / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-1]  # line 3 loses its closing brace
    msg = refused(store, mini_files(), UploadedFile("questions.jsonl", "\n".join(lines).encode()))
    assert msg.startswith("questions.jsonl:3: invalid JSON")


def test_ood_line_with_bad_kind_is_refused_with_file_and_line(store):
    bad = b'{"id": "o1", "query": "weather?", "kind": "far"}\n{"id": "o2", "query": "x", "kind": "middle"}\n'
    msg = refused(store, mini_files(), o=UploadedFile("ood.jsonl", bad))
    assert msg.startswith("ood.jsonl:2: field 'kind' must be one of near, far")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("{}".encode("utf-16"), "questions.jsonl: binary file"),  # UTF-16 has NUL bytes
        (
            json.dumps({"id": "q", "question": "Où?", "needle": "x"}).encode("latin-1").replace(b"\\u00f9", b"\xf9"),
            "questions.jsonl: not valid UTF-8",
        ),
        (b"", "questions.jsonl: empty file"),
    ],
)
def test_wrongly_encoded_or_empty_questions_are_refused(store, data, expected):
    assert refused(store, mini_files(), UploadedFile("questions.jsonl", data)).startswith(expected)


def test_missing_questions_file_is_refused(store):
    before = snapshot(store)
    with pytest.raises(InputError, match="questions.jsonl is required"):
        jobs.prepare_upload(store, mini_files(), None, None, "A", "dense")
    assert snapshot(store) == before


# --- zips ------------------------------------------------------------------------------------


def test_good_zip_keeps_its_folders(store):
    """Two top folders are part of the document ids (a single top folder is not: below)."""
    files = mini_files()
    entries = {f"{'docs' if i % 2 else 'guides'}/{f.name}": f.data for i, f in enumerate(files)}
    data = make_zip(entries | {"__MACOSX/._x.md": b"junk"})
    prepared = jobs.prepare_upload(store, [UploadedFile("corpus.zip", data)], questions(), None, "A", "dense")
    assert prepared.report.to_json()["documents"] == 4 and prepared.skipped == () and prepared.notes == ()
    corpus = Path(prepared.spec.corpus)
    assert sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*.md")) == sorted(entries)
    assert sorted(prepared.documents) == sorted(e.removesuffix(".md") for e in entries)


def test_a_zip_of_one_folder_is_read_from_inside_it_and_says_so(store):
    """``zip -r corpus.zip corpus``: the folder is not part of the document ids (the
    questions' ``document`` names the files as for the folder itself); a note says so. With
    two zips, each zip's name is the prefix and its own top folder is left out too."""
    files = mini_files()
    data = make_zip({"corpus/": b""} | {f"corpus/{f.name}": f.data for f in files})
    prepared = jobs.prepare_upload(store, [UploadedFile("corpus.zip", data)], questions(), None, "A", "dense")
    assert sorted(prepared.documents) == sorted(Path(f.name).stem for f in files)
    assert sorted(p.name for p in Path(prepared.spec.corpus).iterdir()) == sorted(f.name for f in files)
    first = sorted(f.name for f in files)[0]
    assert prepared.notes == (
        "corpus.zip: every file is inside the folder corpus/, which is left out of the document ids "
        f"(corpus/{first} is document {Path(first).stem})",
    )
    two = uploads.corpus_files(
        [
            UploadedFile("a.zip", make_zip({f"top/{f.name}": f.data for f in files[:2]})),
            UploadedFile("b.zip", make_zip({f"b/x/{f.name}": f.data for f in files[2:]})),
        ]
    )
    assert sorted(two.files) == sorted([f"a/{f.name}" for f in files[:2]] + [f"b/x/{f.name}" for f in files[2:]])
    assert len(two.notes) == 2 and "a.zip: every file is inside the folder top/" in two.notes[0]


def test_questions_that_match_no_document_show_every_reason_and_the_document_ids(store):
    bad = b'{"id": "q1", "question": "x?", "document": "corpus/install", "start": 0, "end": 5}\n'
    before = snapshot(store)
    with pytest.raises(jobs.NothingToScore) as exc:
        jobs.prepare_upload(store, mini_files(), UploadedFile("questions.jsonl", bad), None, "A", "dense")
    assert snapshot(store) == before  # the saved upload is removed again
    assert [(i["line"], i["reason"]) for i in exc.value.report.to_json()["invalid_ground_truths"]] == [
        (1, "document 'corpus/install' not in corpus")
    ]
    assert sorted(exc.value.documents) == sorted(Path(f.name).stem for f in mini_files())


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("../evil.md", "escapes the archive folder"),
        ("docs/../../evil.md", "escapes the archive folder"),
        ("/etc/evil.md", "absolute path"),
        ("C:/evil.md", "absolute path"),
        ("..\\evil.md", "escapes the archive folder"),
    ],
)
def test_zip_entries_outside_the_folder_are_refused(store, entry, words):
    data = make_zip({"ok.md": b"# Ok\n\n## A\n\nText.\n", entry: b"# Evil\n"})
    msg = refused(store, [UploadedFile("corpus.zip", data)])
    assert msg.startswith("corpus.zip: entry ") and repr(entry) in msg and words in msg
    assert not (Path(store.path).parent / "evil.md").exists()


def test_zip_with_a_symlink_is_refused(store):
    data = make_zip({"ok.md": b"# Ok\n"}, symlinks=("link.md",))
    assert "entry 'link.md' is a symbolic link" in refused(store, [UploadedFile("corpus.zip", data)])


def test_zip_bomb_is_refused_before_unpacking(store):
    big = b"0" * (3 * 1024 * 1024)  # 3 MB of one byte packs to a few KB
    data = make_zip({"big.txt": big})
    ratio_msg = refused(store, [UploadedFile("bomb.zip", data)], limits=Limits(max_ratio=100.0))
    assert ratio_msg.startswith("bomb.zip: expands to 3.0 MB") and f"{len(big) / len(data):.0f} times" in ratio_msg
    size_msg = refused(
        store, [UploadedFile("bomb.zip", data)], limits=Limits(max_unpacked_bytes=2 * 1024 * 1024, max_ratio=1e9)
    )
    assert size_msg == "bomb.zip: expands to 3.0 MB, over the limit of 2 MB unpacked"


def test_too_many_files_and_too_big_uploads_are_refused(store):
    data = make_zip({f"d{i}.md": b"# T\n" for i in range(6)})
    assert (
        refused(store, [UploadedFile("many.zip", data)], limits=Limits(max_files=5))
        == "many.zip: 6 entries, over the limit of 5 files"
    )
    blob = UploadedFile("huge.md", b"a" * 2048)
    assert (
        refused(store, [blob], limits=Limits(max_upload_bytes=1024))
        == "huge.md: 2,048 bytes is over the upload limit of 0.000976562 MB per file"
    )


def test_not_a_zip_is_refused(store):
    assert refused(store, [UploadedFile("corpus.zip", b"PK\x03\x04 not really")]).startswith(
        "corpus.zip: not a readable zip file"
    )


def test_default_limits_are_stated():
    text = uploads.DEFAULT_LIMITS.describe()
    assert "50 MB per uploaded file" in text and "5,000 files" in text and "200 MB unpacked" in text


def test_old_upload_folders_that_no_job_uses_are_cleaned(tmp_path):
    import os
    import time as _time

    from evalcore import jobs
    from evalcore.store import Store

    store = Store(tmp_path / "s.duckdb")
    root = jobs.uploads_dir(store)
    for name in ("old-orphan", "fresh-orphan", "old-submitted"):
        (root / name / "corpus").mkdir(parents=True)
    day_ago = _time.time() - 25 * 3600
    for name in ("old-orphan", "old-submitted"):
        os.utime(root / name, (day_ago, day_ago))
    with store.connect() as con:
        con.execute(
            "INSERT INTO jobs (job_id, run_id, name, status, created_at, spec) VALUES "
            "('old-submitted', 'old-submitted', 'x', 'complete', now(), '{}')"
        )
    assert jobs.clean_uploads(store) == ["old-orphan"]
    assert sorted(p.name for p in root.iterdir()) == ["fresh-orphan", "old-submitted"]


def test_an_entry_that_lies_about_its_size_is_refused_at_once(store):
    """Declared 100 bytes, inflates to 64 MiB: refused after the first 64 KiB step (the code
    of 964372c inflated all of it in memory; benchmarks/bench_hardening.py measures 1 GiB)."""
    data = lying_zip(["a.md", "b.md"], deflated_zeros(64 * 1024 * 1024))
    msg = refused(store, [UploadedFile("bomb.zip", data)], limits=Limits(max_ratio=1e9))
    assert (
        msg == "bomb.zip: entry 'a.md' expands beyond the 100 bytes its header declares; refusing the zip "
        "(a possible zip bomb)"
    )


def test_an_entry_compressed_other_than_deflate_is_refused(store):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr("a.md", b"# A\n\n## B\n\nText.\n")
    assert "uses compression method 12; only stored and deflated entries are read" in refused(
        store, [UploadedFile("c.zip", buf.getvalue())]
    )
