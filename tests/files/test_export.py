"""evalcore.files.figure_files and evalcore.figures.build: every file carries its caption and provenance, read back
with independent readers (Pillow for PNG text chunks, ElementTree for SVG, the csv module)."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
import zipfile

import pandas as pd
import pytest
from PIL import Image

from evalcore import __version__
from evalcore.figures import build as figures
from evalcore.figures.review import review_summary
from evalcore.files import figure_files as export
from evalcore.read import runs
from evalcore.records import Configuration
from evalcore.store import Store


@pytest.fixture(scope="module")
def store(engine_store) -> Store:
    return Store(engine_store)


@pytest.fixture(scope="module")
def sweep_figure(store, engine_run_id):
    return figures.sweep_figure(store, engine_run_id, Configuration("E", "dense"), 0.4321, rates=True)


def _expected_fields(figure, run_id):
    fields = dict(figure.provenance.fields())
    assert run_id in fields["run"] and "mini" in fields["run"]
    return fields


def test_png_has_the_caption_drawn_in_and_as_text_chunks(sweep_figure, engine_run_id):
    png = export.to_png(sweep_figure)
    image = Image.open(io.BytesIO(png))
    image.load()
    text = image.text
    assert text["Title"] == sweep_figure.title
    for value in (engine_run_id, "E/dense", "in-domain", "Wilson", "t = 0.4321", __version__):
        assert value in text["Description"], value
    assert text["evalcore threshold"] == "t = 0.4321" and text["evalcore configurations"] == "E/dense"
    assert text["Source"] == f"evalcore {__version__}"
    # the caption is drawn below the chart: the image is taller than the chart alone by its lines
    import vl_convert as vlc

    bare = Image.open(io.BytesIO(vlc.vegalite_to_png(sweep_figure.chart.to_json(), scale=2.0)))
    lines = len(sweep_figure.provenance.lines(export.CAPTION_WIDTH))
    assert image.height - bare.height >= lines * 13 * 2 * 0.8


def test_svg_has_title_desc_and_the_caption_as_text(sweep_figure, engine_run_id):
    svg = export.to_svg(sweep_figure)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    first, second = list(root)[:2]
    assert first.tag == ns + "title" and first.text == sweep_figure.title
    assert second.tag == ns + "desc" and engine_run_id in second.text and "t = 0.4321" in second.text
    drawn = [" ".join(t.itertext()) for t in root.iter(ns + "tspan")] + [t.text or "" for t in root.iter(ns + "text")]
    for line in sweep_figure.provenance.lines(export.CAPTION_WIDTH):
        if not line.startswith("made: "):  # an export is dated when it is written
            assert line in drawn, line
    assert any(line.startswith("made: ") for line in drawn)


def test_csv_carries_provenance_and_reads_back(sweep_figure, engine_run_id):
    data = export.to_csv(sweep_figure)
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    names = [name for name, _ in sweep_figure.provenance.fields()]
    assert [r[0].split(":")[0] for r in rows[: len(names)]] == [f"# {n}" for n in names]
    provenance, frame = export.read_csv(data)
    assert engine_run_id in provenance["run"] and provenance["threshold"] == "t = 0.4321"
    assert provenance["configurations"] == "E/dense" and "Wilson" in provenance["interval"]
    pd.testing.assert_frame_equal(frame, sweep_figure.data.reset_index(drop=True), check_dtype=False)


def test_csv_provenance_lines_start_with_a_hash_so_any_reader_can_skip_them():
    """The documented way to read an export without evalcore: skip the lines that start with
    ``#``. A field holding a comma, a quote or a line break must not be CSV-quoted (a quoted
    line starts with ``"#``, so a reader would take it for the header)."""
    frame = pd.DataFrame({"configuration": ["A/dense", "B/dense"], "recall": [0.5, 0.25]})
    provenance = figures.Provenance(
        "Recall@k per configuration",
        ('run "nightly"\nsecond line 20260101-000000-abcdef',),
        ("A/dense", "B/dense"),
        "n = 4",
    )
    text = export.to_csv(frame, provenance).decode("utf-8")
    lines = text.split("\r\n")
    names = [name for name, _ in provenance.fields()]
    assert [line.split(":")[0] for line in lines[: len(names)]] == [f"# {n}" for n in names]
    data = "\r\n".join(line for line in lines if not line.startswith("#"))
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(data)), frame)
    assert pd.read_csv(io.StringIO(text), comment="#").shape == frame.shape
    fields, back = export.read_csv(text)
    assert fields["configurations"] == "A/dense, B/dense" and fields["run"].startswith('run "nightly" second line')
    pd.testing.assert_frame_equal(back, frame)


def test_csv_neutralises_formulas_and_keeps_numbers():
    frame = pd.DataFrame(
        {
            "text": ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\ry", "fine", "a=b"],
            "number": [-3, 2.5, 0, 1, 2, 3, 4, 5],
        }
    )
    out = export.to_csv(frame).decode("utf-8")
    back = list(csv.reader(io.StringIO(out)))[1:]
    assert [r[0] for r in back] == ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "'\ry", "fine", "a=b"]
    assert pd.read_csv(io.StringIO(out))["number"].tolist() == [-3, 2.5, 0, 1, 2, 3, 4, 5]


def test_file_names_name_configurations_and_threshold(store, engine_run_id):
    e = figures.distance_figure(store, engine_run_id, Configuration("E", "dense"))
    g = figures.distance_figure(store, engine_run_id, Configuration("F", "dense"))
    assert export.file_name(e, engine_run_id, "png") != export.file_name(g, engine_run_id, "png")
    assert "E-dense" in export.file_name(e, engine_run_id, "png")
    t1 = figures.sweep_figure(store, engine_run_id, Configuration("E", "dense"), 0.41, rates=False)
    t2 = figures.sweep_figure(store, engine_run_id, Configuration("E", "dense"), 0.45, rates=False)
    assert export.file_name(t1, engine_run_id, "svg").endswith("-E-dense-t0.4100.svg")
    assert export.file_name(t1, engine_run_id, "svg") != export.file_name(t2, engine_run_id, "svg")
    sides = tuple(runs.run_configurations(store, engine_run_id))
    many = figures.matrix_figure(store, sides[:6], 4, True)
    fewer = figures.matrix_figure(store, sides[:5], 4, True)
    assert "6-configurations-" in export.file_name(many, engine_run_id, "png")
    assert export.file_name(many, engine_run_id, "png") != export.file_name(fewer, engine_run_id, "png")


def test_review_pack_holds_every_figure_and_the_summary(scratch_store, engine_run_id):
    from evalcore.read import decisions

    config = Configuration("E", "dense")
    decisions.save_decision(scratch_store, engine_run_id, config, 0.4321, "![x](http://127.0.0.1:9/p.png) **why**")
    sides = tuple(runs.run_configurations(scratch_store, engine_run_id)[:3])
    selection = figures.Selection(engine_run_id, config, 0.4321, "saved decision", sides, 4, True)
    shown = figures.selection_figures(scratch_store, selection)
    pack = export.review_pack(
        shown, engine_run_id, lambda files: review_summary(scratch_store, selection, shown, files)
    )
    with zipfile.ZipFile(io.BytesIO(pack)) as z:
        names = set(z.namelist())
        summary = z.read("summary.md").decode("utf-8")
    for figure in shown:
        for ext in ("png", "svg", "csv"):
            assert export.file_name(figure, engine_run_id, ext) in names
    assert len(names) == 3 * len(shown) + 1
    assert "t = 0.4321" in summary and "E/dense" in summary and "Best at hit@4" in summary
    assert "of real questions" in summary and "| bluffs" in summary
    assert "![x](http" not in summary and "\\!\\[x\\]" in summary  # the note is escaped


@pytest.fixture()
def scratch_store(engine_store, tmp_path) -> Store:
    import shutil

    path = tmp_path / "copy.duckdb"
    shutil.copy(engine_store, path)
    return Store(path)


def test_review_pack_names_its_configuration_and_threshold():
    names = {
        export.pack_name("20260101-000000-abcdef", c, t)
        for c, t in (("E/dense", 0.5), ("G/hybrid", 0.5), ("E/dense", 0.56))
    }
    assert len(names) == 3
    assert "evalcore-20260101-000000-abcdef-review-pack-E-dense-t0.5000.zip" in names


def test_the_sweep_csv_says_each_threshold_starts_a_step_and_the_counts_hold_above_it(store, engine_run_id):
    """The note in the file, checked against a brute-force count from the stored hits: a row's
    bluffs hold for t just above its threshold and at the next row's threshold."""
    figure = figures.sweep_figure(store, engine_run_id, Configuration("E", "dense"), 0.4, rates=False)
    provenance, frame = export.read_csv(export.to_csv(figure))
    assert (
        provenance["note"] == "a row's counts hold for t above its threshold, up to the next row's (gate: distance < t)"
    )
    hits = store.query(
        "SELECT h.query_id, min(h.distance) AS nearest FROM hits h JOIN queries q USING (run_id, query_id) "
        "WHERE h.run_id = ? AND h.strategy = 'E' AND h.retriever = 'dense' AND h.rank <= 4 AND q.domain = 'out' "
        "GROUP BY h.query_id",
        [engine_run_id],
    )
    bluffs = frame[frame["series"] == "bluffs (out-of-domain)"].reset_index(drop=True)
    assert len(bluffs) > 2
    for i in range(len(bluffs) - 1):
        start, end = float(bluffs["threshold"][i]), float(bluffs["threshold"][i + 1])
        for t in (start + (end - start) * 1e-6, end):
            assert int((hits["nearest"] < t).sum()) == int(bluffs["count"][i]), (i, t)


def test_the_matrix_csv_says_what_the_chart_says(store, engine_run_id):
    from evalcore.figures.charts import VERDICT_COLOURS, verdict_of
    from evalcore.records import RunConfiguration

    sides = tuple(RunConfiguration(engine_run_id, Configuration(s, "dense")) for s in ("A", "C", "E"))
    figure = figures.matrix_figure(store, sides, 4, True)
    _, frame = export.read_csv(export.to_csv(figure))
    assert set(frame["verdict"]) <= set(VERDICT_COLOURS)  # the legend's words, never "no clear difference"
    for row in frame.itertuples():
        assert row.verdict == verdict_of(row.wins, row.losses, row.p_shown < 0.05)


def test_a_two_run_export_has_the_destroyed_answers_of_both_runs(two_run_store, two_run_ids):
    from evalcore.records import RunConfiguration

    first, second = two_run_ids
    two = Store(two_run_store)
    sides = (
        RunConfiguration(first, Configuration("E", "dense")),
        RunConfiguration(second, Configuration("wide", "dense")),
    )
    selection = figures.Selection(first, Configuration("E", "dense"), 0.4, "test", sides, 4, True)
    shown = {f.slug: f for f in figures.selection_figures(two, selection)}
    mine, theirs = shown["destroyed"], shown[f"destroyed-{second}"]
    assert set(mine.data["strategy"]) == set("ABCDEF") and set(theirs.data["strategy"]) == {"wide", "tight"}
    assert second in theirs.caption and second in theirs.title
    pack = zipfile.ZipFile(io.BytesIO(export.review_pack(list(shown.values()), first, "summary")))
    names = pack.namelist()
    assert len(names) == len(set(names)) == 3 * len(shown) + 1  # no file overwrites another


def test_the_distance_labels_sit_in_their_own_strip_above_the_bars(store, engine_run_id):
    """The rules' labels ("best out-of-domain top hit ...") are drawn in a strip of their own,
    never over a histogram's bars; a label in the right half is right-aligned to its rule, so
    it stays inside the chart. The figure renders (vl-convert) with both labels in it."""
    figure = figures.distance_figure(store, engine_run_id, Configuration("E", "dense"))
    spec = figure.chart.to_dict()
    views = spec["vconcat"]

    def marks(view):
        return [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in view["layer"]]

    assert "text" in marks(views[0]) and "bar" not in marks(views[0])
    assert all("text" not in marks(v) and "bar" in marks(v) for v in views[1:])
    _, summary = figure.detail
    middle = (float(figure.data["bin_start"].min()) + float(figure.data["bin_end"].max())) / 2
    for layer in views[0]["layer"][1:]:
        rows = spec["datasets"][layer["data"]["name"]]
        align = layer["mark"]["align"]
        assert all((row["x"] > middle) == (align == "right") for row in rows), (align, rows)
    svg = export.to_svg(figure).decode("utf-8") if isinstance(export.to_svg(figure), bytes) else export.to_svg(figure)
    assert f"best out-of-domain top hit {summary.best_out:.3f}" in svg
    assert f"worst in-domain answer {summary.worst_in:.3f}" in svg
