"""Same seed, same bytes: every sample run matches the digests recorded in tools/golden.json.

A refactor leaves these alone; a change that alters what a run writes on purpose records them
anew (``python tools/golden.py --update``) in the same commit and says why. Every sample runs in
the slow tier (part of ``make test``; ``make golden`` runs the same check on its own).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_TOOL = Path(__file__).resolve().parents[1] / "tools" / "golden.py"
_spec = importlib.util.spec_from_file_location("mwp_golden", _TOOL)
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
sys.modules["mwp_golden"] = golden
_spec.loader.exec_module(golden)

RECORDED = json.loads(golden.GOLDEN.read_text())


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=[pytest.mark.slow]) for name in golden.SAMPLES],
)
def test_sample_run_writes_the_recorded_bytes(name: str) -> None:
    assert name in RECORDED, f"no recorded digest for {name}: run tools/golden.py --update"
    diff = golden.differences(RECORDED[name], golden.sample_digest(name))
    assert not diff, f"{name} wrote different bytes:\n" + "\n".join(diff)


def test_digest_sees_a_changed_row(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "x.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    con.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    con.close()
    before = golden.digest_directory(tmp_path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE t SET b = 'z' WHERE a = 2")
    con.close()
    after = golden.digest_directory(tmp_path)
    assert golden.differences(before, after) == ["changed: x.duckdb / t (2 rows)"]
