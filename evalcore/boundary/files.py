"""Files a user names or uploads, read in one place; files evalcore writes, written in one place.

Reading (:func:`read_user_file`, :func:`iter_text_lines`):

- only a regular file is read: a FIFO (which would block the reader for ever), a device, a
  socket or a folder where a file is expected is refused with its kind;
- a symbolic link is resolved and what it points to is checked the same way (a dangling link
  is "file not found");
- the size is checked before reading, against a cap the caller states;
- text is streamed line by line, each line checked to be UTF-8, and a bad byte is reported
  with its line number. A byte order mark at the start is skipped.

The file is opened without blocking and checked on the open descriptor (``fstat``), so a file
swapped for a FIFO between the check and the read is still refused.

Writing (:func:`write_file_atomic`): into the folder the user named, never through a symbolic
link (neither the folder nor the target may be one; the folder is opened with ``O_NOFOLLOW``
and every step is relative to that descriptor), never outside it (the name is one plain path
component), and never half: the bytes go to a temporary file in the same folder, are synced,
and are renamed onto the name (a rename replaces a link, it never writes through one).

A path holding NUL or another control character is refused before it reaches the operating
system (:func:`check_path_text`). Every refusal is an :class:`~evalcore.errors.InputError` naming
the path.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from evalcore.errors import InputError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO (named pipe)", "a folder")."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n:,} bytes"


def check_path_text(raw: str | os.PathLike[str], what: str) -> str:
    """``raw`` as the text of a path a user gave; InputError naming ``what`` when it holds NUL or
    another control character (C0 or DEL: no file name a person means holds one, and the
    operating system refuses NUL with a ValueError). The path itself is not shown."""
    text = os.fspath(raw)
    if not isinstance(text, str):
        raise InputError(f"{what}: a path is text, not {type(text).__name__}")
    for pos, ch in enumerate(text, start=1):
        if ch < " " or ch == "\x7f":
            raise InputError(
                f"{what}: character {pos} of the path is U+{ord(ch):04X} (a path holds no control character)"
            )
    return text


def _open_regular(path: str | Path, field: str, max_bytes: int) -> tuple[int, Path]:
    """An open, read-only descriptor of ``path``'s regular file (links resolved), and the
    resolved path; InputError otherwise."""
    check_path_text(path, field or "file")
    path = Path(path)
    label = f"{field} {path}" if field else str(path)
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        what = "a symbolic link to a missing file" if path.is_symlink() else "file not found"
        raise InputError(f"{label}: {what}") from None
    except RuntimeError:  # a loop of symbolic links
        raise InputError(f"{label}: a loop of symbolic links") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read ({exc.strerror or exc})") from None
    try:
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise InputError(f"{label}: is a folder, not a regular file") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{label}: is {kind_of(info.st_mode)}, not a regular file")
        if info.st_size > max_bytes:
            raise InputError(f"{label}: {_size(info.st_size)}, more than the {_size(max_bytes)} read at most")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, resolved


def read_user_file(path: str | Path, *, field: str, max_bytes: int) -> Path:
    """The resolved path of ``path`` when it is a regular file (after following symbolic
    links) of at most ``max_bytes`` bytes; InputError naming ``field`` and the path otherwise
    (missing, a dangling link, a folder, a FIFO, a device, too large, unreadable)."""
    fd, resolved = _open_regular(path, field, max_bytes)
    os.close(fd)
    return resolved


def iter_text_lines(path: str | Path, *, max_bytes: int) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of ``path`` (checked as :func:`read_user_file`
    checks it), streamed, without the line's ending (``\\n`` or ``\\r\\n``); a byte order mark
    at the start is skipped. InputError "PATH:LINE: not UTF-8 text (...)" at the first line that
    is not UTF-8, and "PATH: more than N bytes" should the file grow past the cap while read."""
    fd, _ = _open_regular(path, "", max_bytes)
    read = 0
    with os.fdopen(fd, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            read += len(raw)
            if read > max_bytes:
                raise InputError(f"{path}: more than the {_size(max_bytes)} read at most")
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{path}:{number}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                ) from None
            if text.endswith("\n"):
                text = text[:-2] if text.endswith("\r\n") else text[:-1]
            yield number, text


def _plain_name(name: str, folder: Path) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise InputError(f"{folder}: {name!r} is not a plain file name inside the folder")
    return name


def write_file_atomic(folder: Path, name: str, data: bytes | str, *, exist_ok: bool = True) -> Path:
    """Write ``data`` (text is written as UTF-8, as it is) to ``folder / name`` all at once: a
    temporary file in ``folder``, synced, then renamed onto ``name``. Refused with InputError
    when ``folder`` is missing, not a folder or a symbolic link, when ``name`` is not one plain
    path component, when the target is a symbolic link (dangling or not), a folder, a FIFO, a
    device or a socket, and, with ``exist_ok=False``, when the target exists (checked by the
    final step itself, so two writers never both succeed). A failed write (a full disk) leaves
    no file behind."""
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return write_file_streamed(folder, name, lambda fh: fh.write(payload), exist_ok=exist_ok)


def write_path_atomic(path: str | Path, data: bytes | str, *, option: str = "") -> Path:
    """:func:`write_file_atomic` of the file a user named as one path (``-o out/report.xml``):
    its folder and name, the refusal prefixed with ``option`` when given."""
    path = Path(path)
    try:
        return write_file_atomic(path.parent, path.name, data)
    except InputError as exc:
        raise InputError(f"{option} {exc}" if option else str(exc)) from None


def write_file_streamed(folder: Path, name: str, write: Callable[[BinaryIO], object], *, exist_ok: bool = True) -> Path:
    """:func:`write_file_atomic` for a file too large to hold in memory at once: ``write`` is
    handed the temporary file (binary, seekable: a ``zipfile.ZipFile`` may write into it) and
    writes the whole content; the same checks, the same rename. An exception ``write`` raises
    leaves no file behind and is raised again."""
    folder = Path(folder)
    name = _plain_name(name, folder)
    target = folder / name
    if folder.is_symlink():
        raise InputError(f"{folder}: is a symbolic link; evalcore writes only into a real folder")
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{folder}: folder not found") from None
    except NotADirectoryError:
        raise InputError(f"{folder}: is not a folder") from None
    except OSError as exc:
        raise InputError(f"{folder}: cannot write ({exc.strerror or exc})") from None
    tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        try:
            info = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise InputError(f"{target}: is a symbolic link; evalcore never writes through one")
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise InputError(f"{target}: is a folder")
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise InputError(f"{target}: is {kind_of(info.st_mode)}, not a regular file; evalcore writes only files")
        if info is not None and not exist_ok:
            raise InputError(f"{target}: already exists")
        _write_tmp(dfd, tmp, write)
        try:
            if exist_ok:
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            else:
                _link_new(dfd, tmp, name, target)
            os.fsync(dfd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    finally:
        os.close(dfd)
    return target


def _write_tmp(dfd: int, tmp: str, write: Callable[[BinaryIO], object]) -> None:
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
    try:
        with os.fdopen(fd, "w+b") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _link_new(dfd: int, tmp: str, name: str, target: Path) -> None:
    """``tmp`` under ``name`` only when ``name`` does not exist yet (a hard link fails when it
    does); on a file system without hard links, the rename after a last look."""
    try:
        os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
    except FileExistsError:
        raise InputError(f"{target}: already exists") from None
    except OSError:
        try:
            os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            return
        raise InputError(f"{target}: already exists") from None
