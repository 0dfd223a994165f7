"""Zip archives for the upload tests and the zip-bomb benchmark, built byte by byte where
the archive must lie about itself."""

from __future__ import annotations

import io
import stat
import struct
import zipfile
import zlib


def make_zip(entries: dict[str, bytes], symlinks: tuple[str, ...] = ()) -> bytes:
    """An honest zip (deflated) of ``entries``, plus symbolic-link entries pointing at /etc/passwd."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name in symlinks:
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def deflated_zeros(size: int) -> bytes:
    """A raw deflate stream of ``size`` zero bytes, made in 1 MiB steps."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [comp.compress(block[: min(len(block), size - i)]) for i in range(0, size, len(block))]
    return b"".join(parts) + comp.flush()


def lying_zip(names: list[str], stream: bytes, declared: int = 100) -> bytes:
    """A zip whose entries all hold the deflate ``stream`` but declare ``declared`` bytes
    unpacked, with the checksum of that many zero bytes (what an honest header would say
    of the first ``declared`` bytes)."""
    crc = zlib.crc32(bytes(declared))
    out, central = bytearray(), bytearray()
    for name in names:
        raw = name.encode()
        offset = len(out)
        out += (
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(stream), declared, len(raw), 0)
            + raw
            + stream
        )
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                8,
                0,
                0x21,
                crc,
                len(stream),
                declared,
                len(raw),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + raw
        )
    cd_offset = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(names), len(names), len(central), cd_offset, 0)
    return bytes(out)
