"""evalcore.boundary.files on real files: only regular files are read (links resolved, size
checked first, UTF-8 checked line by line) and writes never go through a link or outside the
folder, and never leave half a file."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
from conftest import MINI

from evalcore.boundary.files import iter_text_lines, read_user_file, write_file_atomic
from evalcore.errors import InputError


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    real = tmp_path / "q.jsonl"
    real.write_text("a\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert read_user_file(real, field="--questions", max_bytes=10) == real.resolve()
    assert read_user_file(link, field="--questions", max_bytes=10) == real.resolve()


def _refusal(path: Path, max_bytes: int = 100) -> str:
    with pytest.raises(InputError) as err:
        read_user_file(path, field="--questions", max_bytes=max_bytes)
    return str(err.value).replace(str(path), "PATH")


def test_what_is_not_a_regular_file_is_refused_with_its_kind(tmp_path):
    assert _refusal(tmp_path / "missing") == "--questions PATH: file not found"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert _refusal(dangling) == "--questions PATH: a symbolic link to a missing file"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert _refusal(loop).startswith("--questions PATH: ")
    assert _refusal(tmp_path) == "--questions PATH: is a folder, not a regular file"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _refusal(fifo) == "--questions PATH: is a FIFO (named pipe), not a regular file"  # and no hang
    to_fifo = tmp_path / "to-fifo"
    to_fifo.symlink_to(fifo)
    assert _refusal(to_fifo) == "--questions PATH: is a FIFO (named pipe), not a regular file"
    assert _refusal(Path("/dev/null")) == "--questions PATH: is a character device, not a regular file"
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert _refusal(sock_path).startswith("--questions PATH: ")


def test_the_size_is_checked_before_reading(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    assert _refusal(big) == "--questions PATH: 101 bytes, more than the 100 bytes read at most"
    (tmp_path / "ok").write_bytes(b"x" * 100)
    assert read_user_file(tmp_path / "ok", field="f", max_bytes=100)


def test_lines_are_streamed_without_endings_and_a_bom(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"\xef\xbb\xbffirst\r\nsecond\n\nlast \xe2\x80\xa8 inside")
    assert list(iter_text_lines(path, max_bytes=1000)) == [
        (1, "first"),
        (2, "second"),
        (3, ""),
        (4, "last \u2028 inside"),  # a line separator inside a line does not end it
    ]


def test_a_line_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\nalso ok\nbad \xff here\n")
    lines = iter_text_lines(path, max_bytes=1000)
    assert next(lines) == (1, "ok")
    assert next(lines) == (2, "also ok")
    with pytest.raises(InputError, match=r"t\.txt:3: not UTF-8 text \(byte 0xff at column 5\)"):
        next(lines)


def test_iter_text_lines_checks_the_file_like_read_user_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a FIFO"):
        list(iter_text_lines(fifo, max_bytes=10))
    big = tmp_path / "big"
    big.write_bytes(b"x\n" * 10)
    with pytest.raises(InputError, match="20 bytes, more than the 19 bytes"):
        list(iter_text_lines(big, max_bytes=19))


def test_write_file_atomic_writes_text_and_bytes(tmp_path):
    out = write_file_atomic(tmp_path, "a.jsonl", "é\n")
    assert out == tmp_path / "a.jsonl" and out.read_bytes() == "é\n".encode()
    write_file_atomic(tmp_path, "a.jsonl", b"\x00\x01")
    assert out.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]  # no temporary file left


def test_write_file_atomic_never_writes_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "questions.jsonl").symlink_to(outside / "planted.jsonl")  # dangling
    with pytest.raises(InputError, match="is a symbolic link; evalcore never writes through one"):
        write_file_atomic(folder, "questions.jsonl", "x")
    victim = outside / "victim"
    victim.write_text("keep")
    (folder / "b").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        write_file_atomic(folder, "b", "x")
    assert list(outside.iterdir()) == [victim] and victim.read_text() == "keep"
    linked_folder = tmp_path / "linked"
    linked_folder.symlink_to(outside)
    with pytest.raises(InputError, match="is a symbolic link; evalcore writes only into a real folder"):
        write_file_atomic(linked_folder, "c", "x")
    assert list(outside.iterdir()) == [victim]


@pytest.mark.parametrize("name", ["../escape", "sub/file", "..", ".", "", "a\x00b"])
def test_write_file_atomic_keeps_to_the_folder(tmp_path, name):
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(InputError, match="is not a plain file name inside the folder"):
        write_file_atomic(folder, name, "x")
    assert list(tmp_path.iterdir()) == [folder] and list(folder.iterdir()) == []


def test_write_file_atomic_refuses_a_missing_folder_or_a_file(tmp_path):
    with pytest.raises(InputError, match="folder not found"):
        write_file_atomic(tmp_path / "missing", "a", "x")
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is not a folder"):
        write_file_atomic(tmp_path / "file", "a", "x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        write_file_atomic(tmp_path / "dir", "a", "x")


def test_without_exist_ok_only_one_of_many_writers_creates_the_file(tmp_path):
    results: list[str] = []

    def write(i: int) -> None:
        try:
            write_file_atomic(tmp_path, "one", f"writer {i}", exist_ok=False)
            results.append(f"wrote {i}")
        except InputError as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wrote = [r for r in results if r.startswith("wrote")]
    assert len(wrote) == 1, results
    assert all(r == f"{tmp_path / 'one'}: already exists" for r in results if r not in wrote)
    assert (tmp_path / "one").read_text() == f"writer {wrote[0].split()[1]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one"]


def test_a_refused_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    (tmp_path / "one").write_text("old")
    with pytest.raises(InputError, match="already exists"):
        write_file_atomic(tmp_path, "one", "new", exist_ok=False)
    assert (tmp_path / "one").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one"]


def test_a_store_whose_path_holds_quotes_is_compacted_not_broken(tmp_path):
    """The store's path reaches SQL only through the one quoting helper (ATTACH takes no
    parameter): a quote in a folder's name neither breaks the statement nor changes it."""
    from evalcore.inputs import question_sets as sets
    from evalcore.store import Store

    folder = tmp_path / "it's \"odd'); DROP TABLE runs; --"
    folder.mkdir()
    store = Store(folder / "s'x.duckdb")
    store.migrate()
    questions, ood, _ = sets.read_folder(MINI)
    sets.save(store, "kept", questions, ood, parent=None, author=None)
    store.compact()
    assert [v.label for v in sets.versions(Store(folder / "s'x.duckdb"))] == ["kept@1"]
    assert sorted(p.name for p in folder.iterdir()) == ["s'x.duckdb"]
