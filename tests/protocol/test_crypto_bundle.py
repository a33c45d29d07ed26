"""The official cryptography bundle: 62 evaluations, one test each, through our own code."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mwp_local.conformance import crypto_bundle
from mwp_local.conformance.result import BundleResult, EvaluationResult

from ..conftest import PROTOCOL_ROOT


def _planned_ids() -> list[str]:
    manifest = json.loads((PROTOCOL_ROOT / crypto_bundle.MANIFEST_PATH).read_text("utf-8"))
    return [
        crypto_bundle.evaluation_id(case, evaluation)
        for case in manifest["cases"]
        for evaluation in case["evaluations"]
    ]


PLANNED = _planned_ids()


@cache
def result() -> BundleResult:
    return crypto_bundle.run(PROTOCOL_ROOT)


@cache
def by_id() -> dict[str, EvaluationResult]:
    return {evaluation.id: evaluation for evaluation in result().evaluations}


@pytest.mark.parametrize("evaluation_id", PLANNED, ids=PLANNED)
def test_cryptography_evaluation_matches_its_expectation(evaluation_id: str) -> None:
    evaluation = by_id()[evaluation_id]
    assert evaluation.ok, evaluation.detail


def test_bundle_declares_62_uniquely_named_evaluations() -> None:
    assert len(PLANNED) == 62
    assert len(set(PLANNED)) == 62


def test_bundle_integrity_constants_and_profile_table_hold() -> None:
    assert result().failures == []
    assert (result().name, result().passed, result().total) == ("cryptography", 62, 62)


def test_manifest_digest_is_jcs_of_the_manifest_without_its_digest() -> None:
    manifest = crypto_bundle.read_manifest(PROTOCOL_ROOT, crypto_bundle.MANIFEST_PATH)
    assert crypto_bundle.manifest_digest(manifest) == manifest["artifactDigest"]


def _copy_bundle(tmp_path: Path) -> Path:
    # A scratch copy under pytest's tmp_path (outside the project) that a test may damage.
    for part in ("cryptography", "schemas"):
        shutil.copytree(PROTOCOL_ROOT / part, tmp_path / part)
    return tmp_path


def test_a_changed_artifact_byte_fails_every_evaluation(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    target = root / "cryptography" / "keys" / "registry-valid.json"
    target.write_bytes(target.read_bytes().replace(b"acme", b"acmf"))
    damaged = crypto_bundle.run(root)
    assert damaged.total == 62 and damaged.passed == 0
    assert any("sha256 differs" in failure for failure in damaged.failures)


def test_an_edited_manifest_fails_its_artifact_digest(tmp_path: Path) -> None:
    root = _copy_bundle(tmp_path)
    path = root / crypto_bundle.MANIFEST_PATH
    manifest = json.loads(path.read_text("utf-8"))
    manifest["cases"][1]["evaluations"][0]["expect"]["stage"] = "signature"
    path.write_text(json.dumps(manifest), "utf-8")
    damaged = crypto_bundle.run(root)
    assert damaged.passed == 0
    assert any("artifactDigest" in failure for failure in damaged.failures)


def _registry_fixture() -> dict[str, Any]:
    path = PROTOCOL_ROOT / "cryptography" / "keys" / "registry-valid.json"
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def test_registry_fixture_shape_check_accepts_the_bundle_fixtures() -> None:
    for path in sorted((PROTOCOL_ROOT / "cryptography" / "keys").glob("registry-*.json")):
        fixture = json.loads(path.read_text("utf-8"))
        assert crypto_bundle.registry_fixture_problems(fixture) == [], path.name


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda f: f.pop("bindings"), "missing"),
        (lambda f: f.update(extra=1), "unexpected"),
        (lambda f: f.update(bindings=[]), "1..64"),
        (lambda f: f["bindings"][0]["principal"].update(type="robot"), "principal.type"),
        (lambda f: f["bindings"][0].update(keyId="x" * 513), "keyId"),
        (lambda f: f["bindings"][0]["validityHistory"][0].update(sequence=0), "sequence"),
        (lambda f: f["bindings"][0]["validityHistory"][0].update(sequence=True), "sequence"),
        (lambda f: f["bindings"][0]["validityHistory"][0].pop("recordedAt"), "missing"),
    ],
)
def test_registry_fixture_shape_check_names_structural_problems(edit: Any, problem: str) -> None:
    fixture = _registry_fixture()
    edit(fixture)
    problems = crypto_bundle.registry_fixture_problems(fixture)
    assert problems and any(problem in p for p in problems), problems


def test_registry_fixture_shape_check_leaves_semantics_to_the_verifier() -> None:
    fixture = _registry_fixture()
    fixture["organizationId"] = "organizations/acme"  # relative: a stage-4 matter, not shape
    fixture["bindings"][0]["publicKey"] = "not base64url at all"
    assert crypto_bundle.registry_fixture_problems(fixture) == []


def test_signing_key_fixture_shape_check() -> None:
    path = PROTOCOL_ROOT / "cryptography" / "keys" / "signing-coordinator.json"
    fixture = json.loads(path.read_text("utf-8"))
    assert crypto_bundle.signing_key_fixture_problems(fixture) == []
    broken = fixture | {"testOnly": False, "seed": fixture["seed"] + "="}
    assert len(crypto_bundle.signing_key_fixture_problems(broken)) == 2
