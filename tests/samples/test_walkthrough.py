"""The demo walkthrough runs end to end on a real DuckDB file and its log verifies."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization
from mwp_local.store.verify import verify_log

from ..official_schemas import embedded_problems

SCRIPT = Path(__file__).resolve().parents[2] / "sample_missions" / "walkthrough.py"


@pytest.mark.req("MWP-WRK-027")
def test_the_walkthrough_reaches_human_approval_and_its_log_verifies(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("walkthrough", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(tmp_path / "sandbox") == 0
    store = DuckDBLogStore(tmp_path / "sandbox" / LOG_FILE, read_only=True)
    try:
        assert verify_log(load_organization(tmp_path / "sandbox"), store).ok
        assert [r.code for r in store.rejections()] == ["WORK_LEASE_EXPIRED"]
        # Every document its Events embed conforms to the official schema (issue 21 point 5).
        found = [p for e in store.events() for p in embedded_problems(json.loads(e.document))]
        assert found == []
    finally:
        store.close()
