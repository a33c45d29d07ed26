"""The typed values of Approvals, Extension Profiles, First-Admission Records and wire Errors.

Holds :class:`Approval`, :class:`ExtensionProfile`, :class:`FirstAdmissionRecord` and
:class:`Error`; their shapes and vocabularies live in ``documents.governance``. It must not decide
policy, verify signatures or perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ...errors import ErrorCode
from ..common import ProtocolVersion
from ..governance import (
    APPROVAL,
    ERROR,
    EXTENSION_PROFILE,
    FIRST_ADMISSION_RECORD,
    ApprovalDecision,
    ApprovalKind,
    DocumentKind,
)
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, CapabilityRef, Signature

__all__ = ["Approval", "Error", "ExtensionProfile", "FirstAdmissionRecord"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval(WireObject):
    """A signed Approval decision (section 12)."""

    __shape__: ClassVar[Shape] = APPROVAL
    __what__: ClassVar[str] = "approval"

    approval_id: str
    kind: ApprovalKind
    decision: ApprovalDecision
    mission_id: str
    group_id: str
    work_item_id: str | None = None
    mission_revision: int
    artifact_hashes: tuple[str, ...]
    acceptance_policy_version: str
    approver: Actor
    comments: str
    conditions: tuple[str, ...]
    revokes_approval_id: str | None = None
    occurred_at: str
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionProfile(WireObject):
    """A governed, signed Extension Profile (section 18)."""

    __shape__: ClassVar[Shape] = EXTENSION_PROFILE
    __what__: ClassVar[str] = "extension-profile"

    profile_uri: str
    name: str
    version: str
    schema_uri: str
    schema_hash: str
    required_capabilities: tuple[CapabilityRef, ...]
    critical: bool
    command_kinds: tuple[str, ...]
    event_kinds: tuple[str, ...]
    overrides_core_invariants: Literal[False] = False
    approved_by: Actor
    approved_at: str
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstAdmissionRecord(WireObject):
    """Trusted first-admission facts of a Signed Document; not itself signed (section 6.4)."""

    __shape__: ClassVar[Shape] = FIRST_ADMISSION_RECORD
    __what__: ClassVar[str] = "first-admission-record"

    protocol_version: ProtocolVersion = "0.1"
    admission_record_id: str
    organization_id: str
    document_kind: DocumentKind
    signing_hash: str
    key_id: str
    principal: Actor
    trusted_accepted_at: str
    accepted_by: Actor


@dataclass(frozen=True, slots=True, kw_only=True)
class Error(WireObject):
    """The wire form of a protocol error (section 19)."""

    __shape__: ClassVar[Shape] = ERROR
    __what__: ClassVar[str] = "error"

    code: ErrorCode
    message: str
    retryable: bool
    fatal: bool | None = None
    related_frame_id: str | None = None
    related_action_id: str | None = None
    group_id: str | None = None
    expected_revision: int | None = None
    current_revision: int | None = None
    retry_after_ms: int | None = None
    snapshot_artifact_hash: str | None = None
    details: dict[str, Any] | None = None
    occurred_at: str
