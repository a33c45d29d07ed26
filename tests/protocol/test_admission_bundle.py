"""The official admission bundle: 30 evaluations, one test each, through our own code."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import pytest

from mwp_local.conformance import admission_bundle
from mwp_local.conformance.result import BundleResult, EvaluationResult

from ..conftest import PROTOCOL_ROOT


def _planned_ids() -> list[str]:
    manifest = json.loads((PROTOCOL_ROOT / admission_bundle.MANIFEST_PATH).read_text("utf-8"))
    return [ev["id"] for case in manifest["cases"] for ev in case["evaluations"]]


PLANNED = _planned_ids()


@cache
def result() -> BundleResult:
    return admission_bundle.run(PROTOCOL_ROOT)


@cache
def by_id() -> dict[str, EvaluationResult]:
    return {evaluation.id: evaluation for evaluation in result().evaluations}


@pytest.mark.parametrize("evaluation_id", PLANNED, ids=PLANNED)
def test_admission_evaluation_matches_its_expectation(evaluation_id: str) -> None:
    evaluation = by_id()[evaluation_id]
    assert evaluation.ok, evaluation.detail


def test_bundle_declares_30_uniquely_named_evaluations() -> None:
    assert len(PLANNED) == 30
    assert len(set(PLANNED)) == 30


def test_bundle_integrity_constants_and_pin_hold() -> None:
    assert result().failures == []
    assert (result().name, result().passed, result().total) == ("admission", 30, 30)


def _copy_bundle(tmp_path: Path) -> Path:
    # A scratch copy under pytest's tmp_path (outside the project) that a test may damage.
    for part in ("admission", "cryptography", "schemas"):
        shutil.copytree(PROTOCOL_ROOT / part, tmp_path / part)
    return tmp_path


def test_a_changed_cryptography_artifact_breaks_the_admission_bundle_too(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    target = root / "cryptography" / "vectors" / "signed-documents" / "valid" / "command.json"
    target.write_bytes(target.read_bytes() + b"\n")
    damaged = admission_bundle.run(root)
    assert damaged.total == 30 and damaged.passed == 0


def test_a_changed_admission_record_fails_every_evaluation(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    target = root / "admission" / "records" / "valid" / "command.json"
    target.write_bytes(target.read_bytes().replace(b"00:05:00Z", b"00:06:00Z"))
    damaged = admission_bundle.run(root)
    assert damaged.passed == 0
    assert any("sha256 differs" in failure for failure in damaged.failures)
