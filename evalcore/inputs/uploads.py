"""Uploaded inputs: check corpus files, zips and jsonl files, then save them in a folder.

Everything is checked in memory first; a folder is written only when the whole upload
passed, and nothing here touches the run store. Limits (:class:`Limits`, stated on the
New run page):

- one uploaded file (a document, a zip, a jsonl file): at most 50 MB;
- a zip: at most 5,000 entries, at most 200 MB unpacked in total, and unpacked size at
  most 100 times its packed size (a "zip bomb" is refused before anything is unpacked);
- zip entries with an absolute path, a drive letter, a ``..`` part or a symlink are
  refused (the whole zip: such an archive is not a corpus we should guess at);
- each entry is inflated in 64 KiB steps and refused the moment it grows past the size
  its header declares, so a lying header costs a few KiB of memory, not its real size;
  entries compressed other than stored/deflated (bzip2, lzma inflate whole blocks at
  once) or encrypted are refused.

Per-file problems of corpus documents (not UTF-8, binary (a NUL byte), empty, a PDF
that is unreadable or needs a password, not a ``.md``/``.markdown``/``.txt``/``.pdf``/
``.html``/``.htm`` file, a duplicate path) skip that file with a message
naming it; the upload is refused when no document is left. ``questions.jsonl`` and
``ood.jsonl`` are checked by :mod:`evalcore.inputs.groundtruth`'s own readers, so their
messages are ``FILE:LINE: ...`` exactly as the CLI prints them; a bad jsonl file refuses
the upload. Every refusal is an :class:`~evalcore.errors.InputError` naming the file.
"""

from __future__ import annotations

import io
import logging
import shutil
import stat
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evalcore.errors import InputError, control_characters
from evalcore.inputs import extract
from evalcore.inputs.corpus import SOURCE_TYPES, doc_id_for, load_corpus
from evalcore.inputs.groundtruth import read_ood, read_questions
from evalcore.records import Corpus

log = logging.getLogger(__name__)

MB = 1024 * 1024
CHUNK = 64 * 1024  # bytes inflated at a time


@dataclass(frozen=True, slots=True)
class Limits:
    """Upload limits; the defaults are the ones the dashboard states."""

    max_upload_bytes: int = 50 * MB
    max_unpacked_bytes: int = 200 * MB
    max_files: int = 5000
    max_ratio: float = 100.0

    def describe(self) -> str:
        return (
            f"at most {self.max_upload_bytes / MB:g} MB per uploaded file; a zip may hold at most "
            f"{self.max_files:,} files and {self.max_unpacked_bytes / MB:g} MB unpacked, "
            f"at most {self.max_ratio:g} times its packed size"
        )


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """One uploaded file: the name the browser sent and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class CorpusFiles:
    """Documents that passed the checks (relative POSIX path -> bytes) and skip messages."""

    files: dict[str, bytes]
    skipped: tuple[str, ...]
    notes: tuple[str, ...] = ()  # what was done to the paths (a zip's single top folder left out)


@dataclass(frozen=True, slots=True)
class SavedUpload:
    """Where a checked upload was saved."""

    folder: Path
    corpus: Path
    questions: Path | None  # None: the run reads a question set of the store
    ood: Path | None
    skipped: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB / 10 else f"{n:,} bytes"


def check_size(upload: UploadedFile, limits: Limits = DEFAULT_LIMITS) -> None:
    """InputError naming the file when it is over ``limits.max_upload_bytes``."""
    if len(upload.data) > limits.max_upload_bytes:
        raise InputError(
            f"{upload.name}: {_size(len(upload.data))} is over the upload limit of "
            f"{limits.max_upload_bytes / MB:g} MB per file"
        )


def safe_name(name: str) -> str:
    """The base name of an uploaded file (browsers may send a path); InputError when empty."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if not base or base in (".", ".."):
        raise InputError(f"{name!r}: not a usable file name")
    if control_characters(base):
        raise InputError(f"{name!r}: a file name with a control character (such as a NUL byte) is not usable")
    return base


def entry_path(upload_name: str, entry: str) -> PurePosixPath:
    """A zip entry's path, relative and inside the archive folder.

    Backslashes count as separators. Refused (InputError naming the zip and the entry):
    an absolute path (``/x``, ``\\x``), a drive letter (``C:``) and any ``..`` part.
    """
    norm = entry.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        raise InputError(f"{upload_name}: entry {entry!r} has an absolute path; refusing the zip")
    parts = [p for p in norm.split("/") if p not in ("", ".")]

    if control_characters(norm):
        raise InputError(f"{upload_name}: entry {entry!r} has a control character in its name; refusing the zip")
    if ".." in parts:
        raise InputError(f"{upload_name}: entry {entry!r} escapes the archive folder ('..'); refusing the zip")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return info.create_system == 3 and stat.S_ISLNK(info.external_attr >> 16)


def _inflate(upload: UploadedFile, info: zipfile.ZipInfo) -> bytes:
    """The bytes of one entry, streamed from the archive with a hard cap at its declared
    size (see the module doc); InputError naming the zip and the entry otherwise."""
    where = f"{upload.name}: entry {info.filename!r}"
    if info.flag_bits & 0x1:
        raise InputError(f"{where} is encrypted; refusing the zip")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise InputError(
            f"{where} uses compression method {info.compress_type}; only stored and deflated "
            "entries are read; refusing the zip"
        )
    data = memoryview(upload.data)
    offset = info.header_offset
    if bytes(data[offset : offset + 4]) != b"PK\x03\x04" or offset + 30 > len(data):
        raise InputError(f"{where} cannot be read (no local header); refusing the zip")
    name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
    start = offset + 30 + name_len + extra_len
    raw = data[start : start + info.compress_size]
    limit = info.file_size
    out = bytearray()
    if info.compress_type == zipfile.ZIP_STORED:
        out += raw[: limit + 1]
    else:
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        try:
            for i in range(0, len(raw), CHUNK):
                pending = bytes(raw[i : i + CHUNK])
                while pending and len(out) <= limit:
                    out += inflater.decompress(pending, CHUNK)
                    pending = inflater.unconsumed_tail
                if len(out) > limit or inflater.eof:
                    break
            if len(out) <= limit and not inflater.eof:
                out += inflater.flush()
        except zlib.error as exc:
            raise InputError(f"{where} cannot be read ({exc}); refusing the zip") from None
    if len(out) > limit:
        raise InputError(
            f"{where} expands beyond the {limit:,} bytes its header declares; refusing the zip (a possible zip bomb)"
        )
    if len(out) != limit or zlib.crc32(out) != info.CRC:
        raise InputError(f"{where} does not match its header (size or checksum); refusing the zip")
    return bytes(out)


def unpack_zip(upload: UploadedFile, limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, bytes]]:
    """The files of a zip as ``(relative path, bytes)``, after every check in the module doc.

    Sizes are checked from the archive's directory before anything is unpacked, and each
    entry is then inflated with a hard cap at its declared size (:func:`_inflate`), so a
    lying header cannot get past the limits. Directories, hidden files and ``__MACOSX``
    folders are left out silently.
    """
    check_size(upload, limits)
    try:
        archive = zipfile.ZipFile(io.BytesIO(upload.data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"{upload.name}: not a readable zip file ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_files:
            raise InputError(f"{upload.name}: {len(infos):,} entries, over the limit of {limits.max_files:,} files")
        total = 0
        wanted: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        for info in infos:
            path = entry_path(upload.name, info.filename)
            if _is_symlink(info):
                raise InputError(f"{upload.name}: entry {info.filename!r} is a symbolic link; refusing the zip")
            total += info.file_size
            if info.is_dir() or any(p.startswith(".") or p == "__MACOSX" for p in path.parts):
                continue
            wanted.append((info, path))
        if total > limits.max_unpacked_bytes:
            raise InputError(
                f"{upload.name}: expands to {_size(total)}, over the limit of "
                f"{limits.max_unpacked_bytes / MB:g} MB unpacked"
            )
        packed = max(len(upload.data), 1)
        if total / packed > limits.max_ratio:
            raise InputError(
                f"{upload.name}: expands to {_size(total)} from {_size(len(upload.data))} "
                f"({total / packed:.0f} times), over the limit of {limits.max_ratio:g} times; "
                "refusing a possible zip bomb"
            )
        return [(path.as_posix(), _inflate(upload, info)) for info, path in wanted]


def check_document(name: str, data: bytes) -> str | None:
    """None when ``data`` is a usable corpus document, else the reason (naming ``name``).

    Usable: a suffix the extractor registry knows (:mod:`evalcore.inputs.extract`) and bytes its
    extractor's cheap check accepts: Markdown/text non-empty, no NUL byte, valid UTF-8,
    not only whitespace; PDF a ``%PDF-`` header, readable by PDFium, not locked by a
    password; HTML non-empty and not binary. (A PDF without text is found when the
    corpus is loaded, and recorded as a failed document with that reason.)
    """
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in SOURCE_TYPES:
        return f"{name}: not a corpus document ({', '.join(SOURCE_TYPES)}); skipped"
    try:
        extract.EXTRACTORS[suffix].check(data, name)
    except InputError as exc:
        return f"{exc}; skipped"
    return None


def top_folder(paths: Sequence[str]) -> str | None:
    """The one folder every path lies in (``corpus`` of ``corpus/a.md``, ``corpus/b/c.md``),
    else None: what ``zip -r corpus.zip corpus`` makes, whose folder is not part of a
    document's name."""
    tops = {path.split("/", 1)[0] for path in paths}
    if len(tops) == 1 and all("/" in path for path in paths):
        return tops.pop()
    return None


def corpus_files(uploads: Sequence[UploadedFile], limits: Limits = DEFAULT_LIMITS) -> CorpusFiles:
    """Documents of the uploaded files and zips (zip members keep their folders, prefixed by
    the zip's name without ``.zip`` when several zips are uploaded). A zip whose files all lie
    in one top folder (``zip -r corpus.zip corpus``) is read from inside that folder, as if
    the folder were the corpus, and a note says so. InputError when a zip is refused, a file
    is over the size limit, the total is over the unpacked limit, or no document is left
    (the message lists why each file was skipped)."""
    if not uploads:
        raise InputError("no corpus files uploaded")
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    notes: list[str] = []
    zips = sum(u.name.lower().endswith(".zip") for u in uploads)
    total = 0
    for upload in uploads:
        name = safe_name(upload.name)
        check_size(upload, limits)
        if name.lower().endswith(".zip"):
            members = unpack_zip(UploadedFile(name, upload.data), limits)
            prefix = name[:-4] + "/" if zips > 1 else ""
            top = top_folder([rel for rel, _ in members])
            cut = len(top) + 1 if top else 0
            if top:
                first = members[0][0][cut:]
                notes.append(
                    f"{name}: every file is inside the folder {top}/, which is left out of the document ids "
                    f"({top}/{first} is document {doc_id_for(prefix + first)})"
                )
            items = [(prefix + rel[cut:], data, f"{name}: {rel}") for rel, data in members]
        else:
            items = [(name, upload.data, name)]
        for rel, data, label in items:
            if rel in files:
                skipped.append(f"{label}: a file with this path was already uploaded; skipped")
                continue
            reason = check_document(label, data)
            if reason is not None:
                skipped.append(reason)
                continue
            total += len(data)
            if len(files) + 1 > limits.max_files or total > limits.max_unpacked_bytes:
                raise InputError(
                    f"the corpus is over the limit of {limits.max_files:,} files or "
                    f"{limits.max_unpacked_bytes / MB:g} MB"
                )
            files[rel] = data
    if not files:
        raise InputError("no usable corpus document in the upload: " + "; ".join(skipped))
    return CorpusFiles(files=files, skipped=tuple(skipped), notes=tuple(notes))


def check_jsonl(upload: UploadedFile, kind: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check ``questions.jsonl`` (``kind="questions"``) or ``ood.jsonl`` (``kind="ood"``) with
    the ground-truth readers; InputError ``"NAME:LINE: ..."`` (or ``"NAME: ..."``) otherwise."""
    if kind not in ("questions", "ood"):
        raise ValueError(f"kind must be 'questions' or 'ood', got {kind!r}")

    name = safe_name(upload.name)
    check_size(upload, limits)
    try:
        extract.decode(upload.data, name)
    except InputError as exc:
        raise InputError(f"{exc}; refusing the {kind} file") from None
    with tempfile.TemporaryDirectory(prefix="evalcore-upload-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(upload.data)
        try:
            (read_questions if kind == "questions" else read_ood)(path)
        except InputError as exc:
            raise InputError(str(exc).replace(str(path), name)) from None


def save_upload(
    folder: Path,
    corpus: Sequence[UploadedFile],
    questions: UploadedFile | None,
    ood: UploadedFile | None,
    limits: Limits = DEFAULT_LIMITS,
    questions_required: bool = True,
) -> SavedUpload:
    """Check everything, then write ``folder/corpus/...``, ``folder/questions.jsonl`` and
    ``folder/ood.jsonl``. ``folder`` must not exist yet; on any error nothing is left behind.
    ``questions_required=False``: a corpus alone (the run reads a question set of the store)."""
    if questions is None and questions_required:
        raise InputError("questions.jsonl is required")
    docs = corpus_files(corpus, limits)
    if questions is not None:
        check_jsonl(questions, "questions", limits)
    if ood is not None:
        check_jsonl(ood, "ood", limits)
    folder = Path(folder)
    if folder.exists():
        raise ValueError(f"upload folder already exists: {folder}")
    try:
        corpus_dir = folder / "corpus"
        for rel, data in docs.files.items():
            target = corpus_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        q_path = None
        if questions is not None:
            q_path = folder / "questions.jsonl"
            q_path.write_bytes(questions.data)
        o_path = None
        if ood is not None:
            o_path = folder / "ood.jsonl"
            o_path.write_bytes(ood.data)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    for message in docs.skipped:
        log.warning("upload %s: %s", folder.name, message)
    for message in docs.notes:
        log.info("upload %s: %s", folder.name, message)
    return SavedUpload(folder, corpus_dir, q_path, o_path, docs.skipped, docs.notes)


def corpus_from_upload(files: Sequence[UploadedFile]) -> Corpus:
    """The corpus of uploaded files (checked as New run checks them), read in a temporary
    folder that is removed again: nothing is kept on the server."""
    docs = corpus_files(files)
    with tempfile.TemporaryDirectory(prefix="evalcore-questions-") as tmp:
        root = Path(tmp) / "corpus"
        for rel, data in docs.files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return load_corpus(root)
