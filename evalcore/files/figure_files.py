"""Figures as files for slides and reviews: PNG, SVG and CSV, each carrying its provenance,
and the review pack that bundles them (no streamlit here).

- PNG and SVG: the caption (:class:`evalcore.figures.build.Provenance`) is drawn into the image
  below the chart; the SVG also gets ``<title>`` and ``<desc>``, the PNG ``iTXt`` text
  chunks (``Title``, ``Description``, ``Source``, ``Creation Time`` and one per field).
- CSV: the provenance first, one ``# name: value`` line per field, then the header row and
  the data; :func:`read_csv` reads both back. Cells a spreadsheet would run as a formula
  (text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) get a leading
  apostrophe; numbers stay numbers.
- File names name the figure, the run, the configuration(s) and the threshold.

Rendering uses vl-convert (Vega-Lite compiled and drawn in-process, no browser). Charts from
:mod:`evalcore.figures.charts` inline their data and use a generic font family, so nothing is
fetched over the network while rendering.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import struct
import zipfile
import zlib
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import vl_convert as vlc

from evalcore.boundary.csvcells import neutralise_frame
from evalcore.i18n import N_, translator
from evalcore.measures.rounding import threshold_text

if TYPE_CHECKING:
    import pandas as pd

    from evalcore.figures.build import Figure, Provenance

CAPTION_WIDTH = 110  # characters per caption line drawn into an image


def _spec(chart: Any) -> dict[str, Any]:
    spec: dict[str, Any] = chart.to_dict()
    if re.search(r'"url"\s*:', json.dumps(spec.get("data", {})) + json.dumps(spec.get("datasets", {}))):
        raise ValueError("chart refers to data by URL; export needs inline data")
    return spec


def captioned_spec(chart: Any, provenance: Provenance) -> dict[str, Any]:
    """The chart's Vega-Lite spec wrapped so the caption is drawn under it (one field a line)."""
    spec = _spec(chart)
    outer: dict[str, Any] = {}
    for key in ("$schema", "config", "datasets", "background", "padding", "autosize"):
        if key in spec:
            outer[key] = spec.pop(key)
    spec.pop("usermeta", None)
    outer["vconcat"] = [spec]
    outer["title"] = {
        "text": provenance.lines(CAPTION_WIDTH),
        "orient": "bottom",
        "anchor": "start",
        "fontSize": 10,
        "fontWeight": "normal",
        "color": "#333333",
        "offset": 14,
        "lineHeight": 13,
    }
    outer.setdefault("padding", 12)
    return outer


def to_png(figure: Figure, scale: float = 2.0) -> bytes:
    """PNG bytes of a figure, its caption drawn in and written as text chunks (``scale`` 2 for slides)."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale!r}")
    provenance = figure.provenance.stamped()
    png = vlc.vegalite_to_png(captioned_spec(figure.chart, provenance), scale=scale)
    return png_with_text(png, png_text(figure.title, provenance))


def to_svg(figure: Figure) -> str:
    """SVG text of a figure, its caption drawn in and given as ``<title>`` and ``<desc>``."""
    provenance = figure.provenance.stamped()
    svg = vlc.vegalite_to_svg(captioned_spec(figure.chart, provenance))
    return svg_with_title(svg, figure.title, provenance.text())


def png_text(title: str, provenance: Provenance) -> dict[str, str]:
    """The PNG text chunks: the standard keywords, then one ``evalcore <field>`` per field."""
    english = provenance.english_fields()  # keywords stay English (machine-readable); values in the language
    fields = dict(english)
    text = {
        "Title": title,
        "Description": provenance.text(),
        "Source": fields["software"],
        "Creation Time": fields["made"],
    }
    shown = provenance.fields()
    text.update({f"evalcore {name}": value for (name, _), (_, value) in zip(english, shown, strict=False)})
    if len(shown) > len(english):
        text["evalcore language"] = shown[-1][1]
    return text


def png_with_text(png: bytes, text: dict[str, str]) -> bytes:
    """``png`` with an uncompressed ``iTXt`` chunk (UTF-8) per item, inserted before ``IEND``."""
    signature = b"\x89PNG\r\n\x1a\n"
    if not png.startswith(signature) or png[-12:-8] != b"\x00\x00\x00\x00" or png[-8:-4] != b"IEND":
        raise ValueError("not a PNG ending in an IEND chunk")
    chunks = b""
    for key, value in text.items():
        keyword = key.encode("latin-1")
        if not 1 <= len(keyword) <= 79 or b"\x00" in keyword:
            raise ValueError(f"PNG text keyword must be 1-79 Latin-1 characters, got {key!r}")
        body = keyword + b"\x00\x00\x00" + b"\x00" + b"\x00" + value.encode("utf-8")
        chunks += struct.pack(">I", len(body)) + b"iTXt" + body + struct.pack(">I", zlib.crc32(b"iTXt" + body))
    return png[:-12] + chunks + png[-12:]


def svg_with_title(svg: str, title: str, description: str) -> str:
    """``svg`` with ``<title>`` and ``<desc>`` as the first children of its root element."""
    match = re.search(r"<svg\b[^>]*>", svg)
    if match is None:
        raise ValueError("not an SVG document")
    head = f"<title>{escape(title)}</title><desc>{escape(description)}</desc>"
    return svg[: match.end()] + head + svg[match.end() :]


def to_csv(figure_or_frame: Figure | pd.DataFrame, provenance: Provenance | None = None) -> bytes:
    """UTF-8 CSV (RFC 4180 line ends): ``# name: value`` provenance lines (when known), the
    header, the data.

    Text cells that would be formulas are neutralised
    (:func:`evalcore.boundary.csvcells.neutralise_frame`), header included.
    """
    import pandas as pd

    if isinstance(figure_or_frame, pd.DataFrame):
        frame = figure_or_frame
    else:
        frame = figure_or_frame.data
        provenance = (provenance or figure_or_frame.provenance).stamped()
    safe = neutralise_frame(frame)
    buffer = io.StringIO()
    if provenance is not None:  # raw lines, never CSV-quoted: every one starts with "#"
        for name, value in csv_fields(provenance):
            buffer.write(f"# {name}: {_one_line(value)}\r\n")
    safe.to_csv(buffer, index=False, lineterminator="\r\n")  # RFC 4180; a CR inside a cell is quoted
    return buffer.getvalue().encode("utf-8")


#: What a CSV's note line says in a dashboard of another language (its values stay machine-readable).
MACHINE_READABLE = N_("values are machine-readable in every language: '.' decimals, ISO dates, English column names")


def csv_fields(provenance: Provenance) -> list[tuple[str, str]]:
    """A CSV's provenance lines: in English whatever the dashboard's language (a script reads
    every export the same way), naming the language of the figure's other files and saying,
    in both languages, that the values are machine-readable."""
    if provenance.lang == "en":
        return provenance.fields()

    tr = translator(provenance.lang)
    fields = dict(provenance.english_fields())
    said = f"{MACHINE_READABLE} ({tr.gettext(MACHINE_READABLE)})"
    fields["note"] = f"{fields['note']}; {said}" if "note" in fields else said
    return [*fields.items(), ("language", f"{tr.lang} ({tr.name}; the PNG, SVG and summary.md are in it)")]


def read_csv(data: bytes | str) -> tuple[dict[str, str], pd.DataFrame]:
    """An exported CSV read back: its provenance fields and its data."""
    import pandas as pd

    text = data.decode("utf-8") if isinstance(data, bytes) else data
    lines = io.StringIO(text, newline="")
    provenance: dict[str, str] = {}
    rest = ""
    for line in lines:
        row = line.rstrip("\r\n")
        if row.startswith('"# '):  # an earlier export: the line CSV-quoted
            row = next(csv.reader([row]), [""])[0]
        if row.startswith("# ") and ": " in row:
            name, value = row[2:].split(": ", 1)
            provenance[name] = value
        else:
            rest = line + lines.read()
            break
    frame = pd.read_csv(io.StringIO(rest))
    return provenance, frame


def _one_line(value: str) -> str:
    """A provenance value on one line (a line break would end its ``#`` line)."""
    return " ".join(value.splitlines())


def _slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^A-Za-z0-9_.]+", "-", text).strip("-")[:limit].strip("-")


def file_name(figure: Figure, run_id: str, ext: str) -> str:
    """``evalcore-<run>-<figure>[-<configurations>][-t<threshold>].<ext>``.

    Up to three configurations are named (``E-dense_G-dense``); more are counted and
    fingerprinted (``21-configurations-1a2b3c``), so two selections never share a name.
    """
    parts = [f"evalcore-{_slug(run_id)}", _slug(figure.slug)]
    configs = list(figure.configurations)
    if 0 < len(configs) <= 3:
        parts.append(
            "_".join(
                _slug(c.split(" · ")[0] + ("-" + c.rsplit(" ", 1)[-1][-6:] if " · run " in c else "")) for c in configs
            )
        )
    elif configs:
        digest = hashlib.sha1("\n".join(configs).encode("utf-8")).hexdigest()[:6]
        parts.append(f"{len(configs)}-configurations-{digest}")
    if figure.threshold is not None:
        parts.append(f"t{threshold_text(figure.threshold, 4)}")  # the number it is: 0.4137512345, never 0.4138
    return "-".join(parts) + f".{ext}"


def pack_name(run_id: str, configuration: str, threshold: float) -> str:
    """``evalcore-<run>-review-pack-<configuration>-t<threshold>.zip``: the pack holds the
    decision for one configuration and threshold, so two decisions never share a name."""
    return f"evalcore-{_slug(run_id)}-review-pack-{_slug(configuration)}-t{threshold_text(threshold, 4)}.zip"


def review_pack(figures: list[Figure], run_id: str, summary: str | Any) -> bytes:
    """A zip: every figure as PNG, SVG and CSV, and ``summary.md``.

    ``summary`` is the Markdown text, or a function ``(files) -> str`` given the file names
    of each figure (slug -> names), so the summary can list them.
    """
    files: dict[str, list[str]] = {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as pack:
        for figure in figures:
            names = []
            for ext, render in (("png", to_png), ("svg", to_svg), ("csv", to_csv)):
                name = file_name(figure, run_id, ext)
                pack.writestr(name, render(figure))
                names.append(name)
            files[figure.slug] = names
        text = summary(files) if callable(summary) else summary
        pack.writestr("summary.md", text)
    return buffer.getvalue()
