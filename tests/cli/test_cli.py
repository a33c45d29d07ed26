"""The ``mwp-local`` command line, run in-process on real sandbox directories."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pytest

from mwp_local.cli import main
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.signing import sign_document
from mwp_local.store.sandbox_dir import load_organization

from ..conftest import PROTOCOL_ROOT

NOW = "2026-07-15T00:00:00Z"
LATER = "2026-07-15T00:01:00Z"
GROUP = "urn:mwp-local:group:cli"


def _create(path: Path) -> Path:
    doc = {
        "kind": "mission.create",
        "groupId": GROUP,
        "payload": {
            "missionId": "urn:mwp-local:mission:cli",
            "groupId": GROUP,
            "coordinatorAgentId": "urn:missionweaveprotocol:agent:coordinator",
            "objective": "Try the command line",
            "definitionOfDone": [
                {
                    "criterionId": "done",
                    "description": "It works",
                    "evidenceRequired": ["human_review"],
                }
            ],
            "budget": {"toolCallLimit": 10},
            "deadline": "2026-08-01T00:00:00Z",
        },
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    directory = tmp_path / "sbx"
    assert main(["init", str(directory), "--seed", "5", "--now", NOW]) == 0
    assert (directory / "keys" / "README.txt").read_text().startswith("DEVELOPMENT KEYS")
    capsys.readouterr()
    return directory


def _sign(
    sandbox: Path, who: str, unsigned: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> Path:
    capsys.readouterr()
    assert main(["sign", str(sandbox), "--as", who, str(unsigned), "--now", LATER, *extra]) == 0
    signed = unsigned.with_suffix(".signed.json")
    signed.write_text(capsys.readouterr().out)
    return signed


def test_init_names_the_organization_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "acme"
    org = "urn:example:organization:acme"
    assert main(["init", str(directory), "--organization", org, "--now", NOW]) == 0
    assert org in capsys.readouterr().out
    assert load_organization(directory).organization_id == org
    with pytest.raises(SystemExit):  # argparse refuses it before anything is written
        main(["init", str(tmp_path / "bad"), "--organization", "acme corp", "--now", NOW])
    assert "not an identifier" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_conformance_reports_every_bundle_in_full(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--root", str(PROTOCOL_ROOT)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "structural 58/58",
        "cryptography 62/62",
        "admission 30/30",
    ]


def test_sign_submit_and_an_idempotent_retry(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signed = _sign(sandbox, "mission-owner", _create(tmp_path / "create.json"), capsys)
    assert main(["submit", str(sandbox), str(signed), "--now", LATER]) == 0
    first = capsys.readouterr().out
    assert first.startswith("ACCEPTED mission.create")
    assert main(["submit", str(sandbox), str(signed), "--now", LATER]) == 0
    assert "idempotent retry" in capsys.readouterr().out


def test_a_rejection_is_explained_and_kept_apart(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signed = _sign(sandbox, "mission-owner", _create(tmp_path / "create.json"), capsys)
    main(["submit", str(sandbox), str(signed), "--now", LATER])
    message = tmp_path / "msg.json"
    message.write_text(
        json.dumps(
            {
                "kind": "message.post",
                "groupId": GROUP,
                "membershipEpoch": 9,
                "payload": {"content": [{"type": "text", "text": "hi"}]},
            }
        )
    )
    stale = _sign(sandbox, "mission-owner", message, capsys, "--no-fill")
    capsys.readouterr()
    assert main(["submit", str(sandbox), str(stale), "--now", LATER]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REJECTED MEMBERSHIP_STALE:")
    assert "Membership Epoch 9" in out
    assert main(["sql", str(sandbox), "SELECT code FROM rejections", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"code": "MEMBERSHIP_STALE"}
    assert (
        main(
            [
                "sql",
                str(sandbox),
                "SELECT count(*) AS n FROM events WHERE kind = $k",
                "--param",
                "k=message.posted",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {"n": 0}


def test_sql_refuses_writes(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", str(sandbox), "DELETE FROM log_events"]) == 1
    assert "only SELECT" in capsys.readouterr().err


def test_verify_log_export_import_and_registry(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    signed = _sign(sandbox, "mission-owner", _create(tmp_path / "create.json"), capsys)
    main(["submit", str(sandbox), str(signed), "--now", LATER])
    assert main(["verify-log", str(sandbox)]) == 0
    assert "OK" in capsys.readouterr().out
    out = tmp_path / "parquet"
    assert main(["export", str(sandbox), "--parquet", str(out)]) == 0
    con = duckdb.connect(str(sandbox / "group.duckdb"), read_only=True)
    stored = con.sql("SELECT document FROM log_events ORDER BY position").fetchall()
    con.close()
    table = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(stored)
    assert sorted(table.column("document").to_pylist()) == sorted(d for (d,) in stored)
    jsonl = tmp_path / "events.jsonl"
    assert main(["export", str(sandbox), "--jsonl", str(jsonl)]) == 0
    other = tmp_path / "other"
    assert main(["init", str(other), "--seed", "5", "--now", NOW]) == 0
    group_events = [
        line for line in jsonl.read_text().splitlines() if GROUP in line and '"sequence"' in line
    ]
    part = tmp_path / "group.jsonl"
    part.write_text("\n".join(group_events) + "\n")
    capsys.readouterr()
    assert main(["import", str(other), str(part)]) == 0
    assert main(["verify-log", str(other)]) == 0
    capsys.readouterr()
    assert main(["registry", str(sandbox)]) == 0
    registry = json.loads(capsys.readouterr().out)
    assert registry["organizationId"] == "urn:mwp-local:organization:seed-5"  # the seed's own
    principals = {b["principal"]["id"].rsplit(":", 1)[-1] for b in registry["bindings"]}
    assert {"group-authority", "mission-owner", "coordinator", "worker-1"} <= principals


def _exported_and_fresh(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[list[str], Path]:
    """A Mission created in ``sandbox``, its Group Events exported as JSON lines, and a fresh
    sandbox of the same Organization to import them into."""
    signed = _sign(sandbox, "mission-owner", _create(tmp_path / "create.json"), capsys)
    main(["submit", str(sandbox), str(signed), "--now", LATER])
    jsonl = tmp_path / "events.jsonl"
    main(["export", str(sandbox), "--jsonl", str(jsonl)])
    other = tmp_path / "other"
    main(["init", str(other), "--seed", "5", "--now", NOW])
    lines = [
        line for line in jsonl.read_text().splitlines() if GROUP in line and '"sequence"' in line
    ]
    return lines, other


def _group_events(directory: Path) -> int:
    con = duckdb.connect(str(directory / "group.duckdb"), read_only=True)
    try:
        return int(
            con.sql("SELECT count(*) FROM log_events WHERE group_id IS NOT NULL").fetchall()[0][0]
        )
    finally:
        con.close()


def test_an_import_with_a_tampered_event_changes_nothing(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, other = _exported_and_fresh(sandbox, tmp_path, capsys)
    lines[1] = lines[1].replace("Try the command line", "Tampered")
    lines[0] = lines[0].replace("Try the command line", "Tampered")
    part = tmp_path / "bad.jsonl"
    part.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["import", str(other), str(part)]) == 1
    assert "nothing imported" in capsys.readouterr().out
    assert _group_events(other) == 0


def _import_with_extension(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *, critical: bool
) -> tuple[Path, int, str]:
    """Export the sandbox's Group Events, add an unknown extension to the first one, re-sign it
    with the Group Authority's key, import them into a fresh sandbox of the same Organization."""
    lines, other = _exported_and_fresh(sandbox, tmp_path, capsys)
    org = load_organization(sandbox)
    first = {k: v for k, v in json.loads(lines[0]).items() if k != "signature"}
    first["extensions"] = {
        "urn:example:extension:risk-score": {"version": "1.0.0", "critical": critical, "data": {}}
    }
    resigned = sign_document(
        "event", first, org.authority.key_pair, org.identity().authority_key_id
    )
    lines[0] = canonicalize(resigned).decode("utf-8")
    part = tmp_path / "part.jsonl"
    part.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    code = main(["import", str(other), str(part)])
    return other, code, capsys.readouterr().out


def test_an_imported_event_that_needs_an_unknown_critical_extension_is_refused(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other, code, out = _import_with_extension(sandbox, tmp_path, capsys, critical=True)
    assert code == 1
    assert out.startswith("REJECTED (nothing imported) UNKNOWN_CRITICAL_EXTENSION: line 1 (Event ")
    assert "mission.created): the mission.created Event depends on" in out
    assert "critical extension urn:example:extension:risk-score" in out and "(§18)" in out
    assert _group_events(other) == 0


def test_an_imported_event_with_an_unknown_noncritical_extension_is_kept(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other, code, out = _import_with_extension(sandbox, tmp_path, capsys, critical=False)
    assert code == 0, out
    con = duckdb.connect(str(other / "group.duckdb"), read_only=True)
    (first,) = con.sql(
        "SELECT document FROM log_events WHERE group_id IS NOT NULL ORDER BY position LIMIT 1"
    ).fetchall()[0]
    con.close()
    assert '"urn:example:extension:risk-score"' in first
