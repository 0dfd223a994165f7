"""Hostile PDFs built here (no files in the repository): a valid one-page PDF around any
content stream, which is FlateDecode-compressed as it is produced (so a stream that inflates
to 1 GiB never exists in memory here)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable


def deflate(pieces: Iterable[bytes], level: int = 1) -> bytes:
    packer = zlib.compressobj(level)
    return b"".join(packer.compress(p) for p in pieces) + packer.flush()


def pdf(stream: bytes, text_first: bytes = b"") -> bytes:
    """A one-page PDF whose content stream is ``stream`` (already Flate-compressed)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def text_page(words: str = "The server listens on port 8470 by default.") -> bytes:
    return pdf(deflate([b"BT /F1 12 Tf 72 720 Td (" + words.encode() + b") Tj ET"]))


def inflating(size: int) -> bytes:
    """A page whose content stream inflates to ``size`` bytes (a line of text, then spaces).
    The stream is made without compressing ``size`` bytes: after a full flush a deflate
    block does not refer back, so one compressed MiB of spaces is repeated, and the zlib
    checksum is computed over what it inflates to."""
    head = b"BT /F1 12 Tf 72 720 Td (Inflated page) Tj ET\n"
    block = b" " * (1 << 20)
    n = (size - len(head)) // len(block)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    once = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH) == once
    end = packer.flush()
    check = zlib.adler32(head)
    for _ in range(n):
        check = zlib.adler32(block, check)
    return pdf(b"\x78\xda" + first + once * n + end + check.to_bytes(4, "big"))


def many_objects(n: int) -> bytes:
    """A page of ``n`` text objects (each draws one letter)."""
    one = b"BT /F1 1 Tf 1 1 Td (a) Tj ET\n"
    return pdf(deflate(one for _ in range(n)))
