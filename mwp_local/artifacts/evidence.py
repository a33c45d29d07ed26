"""Evidence documents (§13.2, MWP-WRK-026): building them signed and schema-valid, and keeping
private reasoning out of them.

Owns ``build_evidence`` (subject, criteria, method, result, producer, timestamp and referenced
Artifacts, signed by the Principal that produced the check) and re-exports the guard
``private_reasoning_paths`` / ``ensure_no_private_reasoning`` (``protocol.reasoning``, which the
Authority applies too). The schema lets ``details`` hold any object, so the guard refuses members
whose names say they carry private chain-of-thought, hidden prompts or raw internal memory
(``reasoning``, ``chainOfThought``, ``scratchpad``, ...), at any depth. It judges structure, not
prose: it keeps a well-meaning check from attaching its
trace, and it refuses a reviewer's Evidence that does. Evidence states what was checked and what
came out, never how a model thought about it (§4 invariant 13). Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.documents import EvidenceResult, EvidenceType, SubjectType
from ..protocol.ids import derived_uuid
from ..protocol.reasoning import (
    PRIVATE_REASONING_NAMES,
    ensure_no_private_reasoning,
    private_reasoning_paths,
)
from .signers import Signer, sign_valid

__all__ = [
    "PRIVATE_REASONING_NAMES",
    "build_evidence",
    "ensure_no_private_reasoning",
    "private_reasoning_paths",
]


def build_evidence(
    signer: Signer,
    *,
    mission_id: str,
    group_id: str,
    work_item_id: str,
    type: EvidenceType | str,
    subject: tuple[SubjectType | str, str],
    criteria: Iterable[str],
    method: str,
    result: EvidenceResult | str,
    artifact_hashes: Iterable[str],
    created_at: str,
    details: Mapping[str, Any] | None = None,
    tool_version: str | None = None,
    model_version: str | None = None,
    evidence_id: str | None = None,
) -> dict[str, Any]:
    """A signed Evidence document valid against ``evidence.schema.json``.

    ``subject`` is ``(type, id)`` (a WorkItem or Mission ID, or an Artifact's content hash).
    The ID defaults to one derived from the WorkItem, type, subject, criteria and time. Raises
    ``INVALID_COMMAND`` for private reasoning in ``details`` and ``SCHEMA_VALIDATION_FAILED``
    when the document would not conform.
    """
    criterion_ids = list(dict.fromkeys(criteria))
    kind = str(EvidenceType(type))
    subject_type, subject_id = str(SubjectType(subject[0])), subject[1]
    doc: dict[str, Any] = {
        "evidenceId": evidence_id
        or derived_uuid(
            signer.organization_id,
            "evidence",
            work_item_id,
            kind,
            subject_id,
            ",".join(criterion_ids),
            method,
            created_at,
        ),
        "missionId": mission_id,
        "groupId": group_id,
        "workItemId": work_item_id,
        "type": kind,
        "subject": {"type": subject_type, "id": subject_id},
        "criterionIds": criterion_ids,
        "method": method,
        "result": str(EvidenceResult(result)),
        "artifactHashes": list(dict.fromkeys(artifact_hashes)),
        "generatedBy": signer.actor,
        "createdAt": created_at,
    }
    if details is not None:
        ensure_no_private_reasoning(details, "Evidence details")
        doc["details"] = dict(details)
    if tool_version is not None:
        doc["toolVersion"] = tool_version
    if model_version is not None:
        doc["modelVersion"] = model_version
    return sign_valid("evidence", doc, signer)
