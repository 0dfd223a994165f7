"""One run reference (evalcore.read.refs): ``show`` takes a run id, a unique id prefix or a run
name like every other command (real runs of conftest.gate_store; the ids come from the rows)."""

from __future__ import annotations

import json

from conftest import copy_with_failed_run

from evalcore.cli import main
from evalcore.store import Store


def show(store, *args, capsys):
    code = main(["--store", str(store), "show", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_show_takes_a_name_a_prefix_or_an_id(gate_store, tmp_path, capsys):
    # a newer failed run of the same name: the name still means its newest complete run
    path = copy_with_failed_run(gate_store, tmp_path, "zz-failed-1", "base", "disk full")
    rows = Store(path).query("SELECT run_id, status FROM runs WHERE name = 'base' ORDER BY created_at DESC")
    assert list(rows["status"])[0] == "failed"
    complete = str(rows[rows["status"] == "complete"]["run_id"].iloc[0])

    by_id = show(path, complete, capsys=capsys)
    assert by_id[0] == 0 and by_id[1].startswith(f"run {complete}  base  status complete")
    assert show(path, "base", capsys=capsys) == by_id
    assert show(path, complete[:17], capsys=capsys) == by_id
    code, out, _ = show(path, "base", "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["run_id"] == complete

    # a name with no complete run: its newest run, with its status and reason
    (tmp_path / "more").mkdir()
    copy = copy_with_failed_run(path, tmp_path / "more", "zz-failed-2", "broken", "out of memory")
    code, out, _ = show(copy, "broken", capsys=capsys)
    assert code == 0 and out.splitlines()[:2] == ["run zz-failed-2  broken  status failed", "reason: out of memory"]

    code, out, err = show(path, "nope", capsys=capsys)
    assert code == 2 and out == "" and "no run 'nope'" in err
