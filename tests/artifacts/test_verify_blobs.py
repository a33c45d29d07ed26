"""``verify-log`` re-hashes every Artifact blob the log references, and ``mwp-local verify-log
DIR`` reports a tampered or missing one (MWP-WRK-024)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.authority.organization import organization_to_json
from mwp_local.cli import main
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.sandbox_dir import LOG_FILE
from mwp_local.store.verify import VerifyReport, verify_log

from ..authority.world import LoggedWorld
from .scene import Scene

WID = "urn:mwp-local:work:verified-blobs"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[Path, Scene, list[dict[str, object]]]]:
    """A sandbox directory (organization.json, group.duckdb, blobs/) with two Artifacts."""
    directory = tmp_path / "sbx"
    directory.mkdir()
    store = DuckDBLogStore(directory / LOG_FILE)
    scene = Scene(LoggedWorld(store), directory / "blobs")
    (directory / "organization.json").write_text(json.dumps(organization_to_json(scene.w.org)))
    scene.to_active(WID)
    first = scene.publish(WID, b"first")
    second = scene.publish(WID, b"second", sources=[first["contentHash"]])
    store.close()
    yield directory, scene, [first, second]


def _report(directory: Path, scene: Scene) -> VerifyReport:
    with DuckDBLogStore(directory / LOG_FILE, read_only=True) as store:
        return verify_log(scene.w.org, store, blobs=scene.blobs)


@pytest.mark.req("MWP-WRK-024")
def test_verify_log_rehashes_every_published_blob(
    sandbox: tuple[Path, Scene, list[dict[str, object]]], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, scene, _ = sandbox
    report = _report(directory, scene)
    assert report.ok and report.blobs == 2
    assert main(["verify-log", str(directory)]) == 0
    assert "2 Artifact blobs re-hashed" in capsys.readouterr().out


@pytest.mark.req("MWP-WRK-024")
def test_verify_log_reports_a_tampered_blob_naming_the_artifact(
    sandbox: tuple[Path, Scene, list[dict[str, object]]], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, scene, (first, _) = sandbox
    ref = scene.blobs.ref(str(first["contentHash"]))
    scene.blobs.blob_path(ref.b3).write_bytes(b"firsT")
    report = _report(directory, scene)
    (problem,) = report.problems
    assert str(first["artifactId"]) in problem and "integrity check" in problem
    capsys.readouterr()
    assert main(["verify-log", str(directory)]) == 1
    out = capsys.readouterr().out
    assert "FAILED: 1 problem(s)" in out and str(first["contentHash"]) in out


@pytest.mark.req("MWP-WRK-024")
def test_verify_log_reports_a_missing_blob(
    sandbox: tuple[Path, Scene, list[dict[str, object]]], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, scene, (_, second) = sandbox
    ref = scene.blobs.ref(str(second["contentHash"]))
    scene.blobs.blob_path(ref.b3).unlink()
    assert main(["verify-log", str(directory)]) == 1
    assert "is gone" in capsys.readouterr().out
    (problem,) = _report(directory, scene).problems
    assert "is gone" in problem and str(second["artifactId"]) in problem


def test_without_a_blob_store_verify_log_leaves_content_alone(
    sandbox: tuple[Path, Scene, list[dict[str, object]]],
) -> None:
    directory, scene, (first, _) = sandbox
    ref = scene.blobs.ref(str(first["contentHash"]))
    scene.blobs.blob_path(ref.b3).unlink()
    with DuckDBLogStore(directory / LOG_FILE, read_only=True) as store:
        report = verify_log(scene.w.org, store)
    assert report.ok and report.blobs == 0
