"""A traffic line's identity (issue 45, "nothing undercounted") in a store made before it:
migration 0014 on a store at schema version 13 holding the undercount that version made (a
deployment's replay that took its lines for another deployment's, or for an imported log's)
keeps every stored line and stores the lost ones. The served cases (two deployments on one
configuration, the id rule, hostile ids) are rows of the reliability net:
tests/reliability/test_trust_traffic.py "posted lines"."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from evalcore.read.traffic.stored import lines_by_deployment
from evalcore.records import Configuration
from evalcore.store import Store
from evalcore.store.migrate import migrations

E_DENSE = Configuration("E", "dense")


# --- migration 0014 on a store of schema version 13 -------------------------------------------

T0 = datetime(2026, 11, 2, 8, 0)


def _v13_store(path: Path) -> None:
    """A store at schema version 13 as that version left it: deployments prod-a and prod-b on
    one configuration posted the same two lines (time, text) under their own ids, and an
    imported log holds one more; prod-b's replay stored 0 of its 2 lines (taken for prod-a's)."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL)"
    )
    for number, name, sql in migrations():
        if number > 13:
            break
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [number, name])
    key = ["r1", "E", "dense"]
    imports = [("imp-log", "log.jsonl"), ("imp-a", "deployment prod-a"), ("imp-b", "deployment prod-b")]
    for import_id, source in imports:
        con.execute(
            "INSERT INTO traffic_imports (import_id, run_id, strategy, retriever, source, format, status, started_at) "
            "VALUES (?, ?, ?, ?, ?, 'jsonl', 'complete', now())",
            [import_id, *key, source],
        )
    for h in ("h1", "h2", "h3"):
        con.execute("INSERT INTO traffic_texts VALUES (?, ?, ?, ?, ?, 0.4, NULL)", [*key, h, f"text {h}"])
    rows = [  # (line_key, occurrence, import_id, line, asked_at, text_hash, label)
        (11, 1, "imp-log", 1, T0 + timedelta(hours=1), "h3", "answerable"),
        (21, 1, "imp-a", 1, T0, "h1", None),
        (22, 1, "imp-a", 2, T0, "h2", "off-topic"),
    ]
    con.executemany("INSERT INTO traffic_queries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [[*key, *r] for r in rows])
    posted = [("prod-a", "a-1", 1, "h1", None), ("prod-a", "a-2", 2, "h2", "off-topic")]
    posted += [("prod-b", "b-1", 1, "h1", "answerable"), ("prod-b", "b-2", 2, "h2", None)]
    for deployment, post_id, seq, h, label in posted:
        con.execute(
            "INSERT INTO traffic_posted VALUES (?, ?, ?, now(), ?, ?, NULL, ?, 'key:prod', ?)",
            [deployment, post_id, seq, T0, h, label, "imp-a" if deployment == "prod-a" else "imp-b"],
        )
    con.close()


def test_migrating_a_store_of_schema_13_keeps_every_line_and_counts_the_lines_it_lost(tmp_path):
    path = tmp_path / "evalcore.duckdb"
    _v13_store(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM traffic_queries").fetchall() == [(3,)]
    finally:
        con.close()
    applied = Store(path).migrate()
    assert [name for name in applied if name.startswith("0014")] == ["0014_traffic_identity"]
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute(
            "SELECT deployment, import_id, line, asked_at, text_hash, occurrence, label FROM traffic_queries "
            "ORDER BY deployment, import_id, line"
        ).fetchall()
    finally:
        con.close()
    assert got == [
        ("", "imp-log", 1, T0 + timedelta(hours=1), "h3", 1, "answerable"),  # kept, as an imported log's
        ("prod-a", "imp-a", 1, T0, "h1", 1, None),  # kept, now prod-a's
        ("prod-a", "imp-a", 2, T0, "h2", 1, "off-topic"),
        ("prod-b", "imp-b", 1, T0, "h1", 1, "answerable"),  # lost before, counted now
        ("prod-b", "imp-b", 2, T0, "h2", 1, None),
    ]
    reader = Store(path)
    assert lines_by_deployment(reader, "r1", E_DENSE) == {"prod-a": 2, "prod-b": 2, "": 1}
    assert Store(path).migrate() == []  # and once only


def test_an_imported_log_and_a_deployment_with_the_same_line_keep_one_each_after_migration(tmp_path):
    """The repair stores a posted line its replay lost to an imported log's line, once."""
    path = tmp_path / "evalcore.duckdb"
    _v13_store(path)
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO traffic_posted VALUES ('prod-b', 'b-3', 3, now(), ?, 'h3', NULL, NULL, 'key:prod', 'imp-b')",
        [T0 + timedelta(hours=1)],
    )
    con.close()
    Store(path).migrate()
    got = Store(path).query(
        "SELECT deployment, count(*) AS n FROM traffic_queries WHERE text_hash = 'h3' GROUP BY 1 ORDER BY 1"
    )
    assert list(zip(got["deployment"], got["n"], strict=True)) == [("", 1), ("prod-b", 1)]
