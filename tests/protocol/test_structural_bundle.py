"""The structural bundle: the 58 official schema vectors judged by our own validators.

Each vector is its own test: our verdict must equal the manifest's, and an invalid vector must
be refused for the reason it was written for (the exact member paths our problems name). The
runner in ``mwp_local.conformance.structural`` is then checked end to end on the real checkout
and on small broken checkouts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.conformance import structural
from mwp_local.protocol.documents import errors
from tests.protocol.test_documents_corpus import MANIFEST, PROTOCOL, Case

#: Why each invalid vector is invalid: the paths of every problem we report.
REFUSED_AT: dict[str, set[str]] = {
    "error-unknown-stale-coordinator-code": {"code"},
    "command-missing-signature": {"signature"},
    "command-action-id-trailing-line-feed": {"actionId"},
    "command-action-id-relative-reference": {"actionId"},
    "command-action-id-iri-only": {"actionId"},
    "human-command-with-session-epoch": {"sessionEpoch"},
    "agent-command-missing-session-epoch": {"sessionEpoch"},
    "agent-command-missing-membership-epoch": {"membershipEpoch"},
    "coordinator-command-missing-coordinator-epoch": {"coordinatorEpoch"},
    "event-zero-sequence": {"sequence"},
    "group-event-missing-authority-context": {"groupId", "sequence", "aggregateRevision"},
    "websocket-partial-stream": {"frameType"},
    "agent-card-with-permissions": {"permissions"},
    "presence-with-credentials": {"credentials"},
    "mission-without-final-human-approval": {"approvalPolicy.finalHumanApproval"},
    "mission-legacy-completed-state": {"state"},
    "membership-provisional-without-context": {"contextPackageId"},
    "conversation-work-item-without-primary": {"primaryWorkItemId"},
    "message-authorizes-action": {"authority"},
    "work-contract-without-acceptance": {"acceptanceCriteria"},
    "work-item-active-without-owner": {"owner", "selectionBasis"},
    "work-item-legacy-accepted-state": {"state"},
    "artifact-with-inline-content": {"inlineContent"},
    "evidence-without-criteria": {"criterionIds"},
    "lease-renewed-without-timestamp": {"lastRenewedAt"},
    "approval-final-by-agent": {"approver.type"},
    "context-package-without-event-provenance": {"sourceEventRange.eventIds"},
    "extension-overrides-core": {"overridesCoreInvariants"},
    "group-archived-without-snapshot": {"archiveSnapshotId"},
    "group-snapshot-without-policy-log": {"policyLog"},
    "first-admission-record-with-signature": {"signature"},
}


#: The structural half of the requirements some vectors exercise (the field a requirement names
#: is present and well-formed, or its absence is refused).
PROVES: dict[str, tuple[str, ...]] = {
    "work-contract": ("MWP-WRK-001",),
    "work-contract-without-acceptance": ("MWP-WRK-001",),
    "work-item": ("MWP-WRK-006", "MWP-WRK-012"),
    "work-item-active-without-owner": ("MWP-WRK-006",),
    "agent-card": ("MWP-WRK-011",),
    "presence-record": ("MWP-WRK-011",),
    "lease": ("MWP-WRK-013",),
    "lease-renewed-without-timestamp": ("MWP-WRK-013",),
    "artifact": ("MWP-WRK-023",),
    "artifact-with-inline-content": ("MWP-WRK-023",),
    "evidence": ("MWP-WRK-025", "MWP-WRK-026"),
    "evidence-without-criteria": ("MWP-WRK-025", "MWP-WRK-026"),
    "context-package": ("MWP-WRK-027",),
    "context-package-without-event-provenance": ("MWP-WRK-027",),
    "websocket-frame": ("MWP-WRK-030",),
}


def _tagged(cases: list[Case]) -> list[Any]:
    return [
        pytest.param(c, id=c.id, marks=[pytest.mark.req(*PROVES.get(Path(c.instance).stem, ()))])
        if Path(c.instance).stem in PROVES
        else pytest.param(c, id=c.id)
        for c in cases
    ]


@pytest.mark.parametrize("case", _tagged(MANIFEST))
def test_vector_gets_the_manifest_verdict_from_our_validator(case: Case) -> None:
    found = errors(case.schema, case.doc)
    assert (not found) is case.valid, [str(p) for p in found]


@pytest.mark.parametrize("case", _tagged([c for c in MANIFEST if not c.valid]))
def test_invalid_vector_is_refused_for_the_reason_it_was_written_for(case: Case) -> None:
    assert {p.where for p in errors(case.schema, case.doc)} == REFUSED_AT[Path(case.instance).stem]


def test_the_runner_scores_every_manifest_case_in_order_and_all_pass() -> None:
    result = structural.run(PROTOCOL)
    assert result.name == "structural"
    assert [e.id for e in result.evaluations] == [c.instance for c in MANIFEST]
    assert [e for e in result.evaluations if not e.ok] == []
    assert (result.passed, result.total, result.failures) == (58, 58, [])


def _checkout(tmp_path: Path, cases: list[dict[str, Any]], files: dict[str, str]) -> Path:
    (tmp_path / "conformance").mkdir()
    (tmp_path / "conformance" / "manifest.json").write_text(json.dumps(cases))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


GROUP = {
    "groupId": "urn:x:g",
    "missionId": "urn:x:m",
    "state": "active",
    "mainConversationId": "urn:x:c",
    "createdAt": "2026-07-15T00:00:00Z",
}


def test_a_wrong_expectation_is_a_failure_that_names_the_problems(tmp_path: Path) -> None:
    root = _checkout(
        tmp_path,
        [{"schema": "schemas/group.schema.json", "instance": "g.json", "valid": False}],
        {"g.json": json.dumps(GROUP)},
    )
    result = structural.run(root)
    assert (result.passed, result.total) == (0, 1)
    assert result.failures == ["g.json: expected invalid group, but our validator accepted it"]


def test_duplicate_member_names_fail_before_schema_validation(tmp_path: Path) -> None:
    text = json.dumps(GROUP)[:-1] + ', "state": "archived"}'
    root = _checkout(
        tmp_path,
        [{"schema": "schemas/group.schema.json", "instance": "g.json", "valid": True}],
        {"g.json": text},
    )
    [evaluation] = structural.run(root).evaluations
    assert not evaluation.ok
    assert "PROTOCOL_VIOLATION" in evaluation.detail


def test_an_unknown_schema_in_the_manifest_is_a_failed_case(tmp_path: Path) -> None:
    root = _checkout(
        tmp_path,
        [{"schema": "schemas/common.schema.json", "instance": "g.json", "valid": True}],
        {"g.json": json.dumps(GROUP)},
    )
    [evaluation] = structural.run(root).evaluations
    assert not evaluation.ok
    assert "unknown document schema" in evaluation.detail


def test_a_missing_manifest_is_a_bundle_failure(tmp_path: Path) -> None:
    result = structural.run(tmp_path)
    assert (result.passed, result.total) == (0, 0)
    assert len(result.failures) == 1
    assert result.failures[0].startswith("manifest unreadable")
