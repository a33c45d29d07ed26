"""The document corpus and the official-schema oracles shared by the document tests.

Holds the 27 valid official vectors plus hand-made seeds that reach every optional member and
every conditional branch of the 21 document schemas, and two ``jsonschema`` oracles built from
the official schema files (test-only; the project never uses a JSON Schema library):

* ``stock``: Draft 2020-12 with the library's own format checker, exactly as a generic
  validator would run the official schemas;
* ``strict``: the same schemas with the listed deliberate differences applied (the section 2
  timestamp profile for ``date-time``, RFC 3986 for ``uri``, ECMA-262 semantics for
  ``pattern``), written here independently of the project's shape code.

The tests in this module check the corpus itself: every seed is valid for both oracles and for
our validator, no seed already contains a string on which the oracles differ, and the seeds
cover every property the schemas define.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mwp_local.protocol.documents import SCHEMA_NAMES, errors
from mwp_local.protocol.ids import is_protocol_id
from mwp_local.protocol.timestamps import is_timestamp

PROTOCOL = Path(__file__).resolve().parents[2].parent / "shared" / "protocol"
SCHEMA_DIR = PROTOCOL / "schemas"


def _load(relative: str) -> Any:
    return json.loads((PROTOCOL / relative).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Case:
    """One manifest case: schema name, instance path, expectation, and the document."""

    name: str
    schema: str
    instance: str
    valid: bool
    doc: Any

    @property
    def id(self) -> str:
        return Path(self.instance).stem + ("" if self.valid else " (invalid)")


MANIFEST: list[Case] = [
    Case(
        name=entry["name"],
        schema=Path(entry["schema"]).name.removesuffix(".schema.json"),
        instance=entry["instance"],
        valid=entry["valid"],
        doc=_load(entry["instance"]),
    )
    for entry in _load("conformance/manifest.json")
]
VALID_VECTORS = [c for c in MANIFEST if c.valid]


def vector(stem: str) -> Any:
    """A deep copy of the valid official vector ``conformance/vectors/valid/<stem>.json``."""
    return copy.deepcopy(_load(f"conformance/vectors/valid/{stem}.json"))


# --------------------------------------------------------------------------- oracles

SCHEMA_DOCS: dict[str, Any] = {
    path.name.removesuffix(".schema.json"): json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(SCHEMA_DIR.glob("*.schema.json"))
}
REGISTRY: Registry[Any] = Registry().with_resources(
    (doc["$id"], Resource.from_contents(doc)) for doc in SCHEMA_DOCS.values()
)


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


OFFICIAL_PATTERNS: frozenset[str] = frozenset(
    v for doc in SCHEMA_DOCS.values() for k, v in _walk(doc) if k == "pattern"
)

_ECMA_SPACE = "\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _python_equivalent(pattern: str) -> str:
    """ECMA-262 -> Python for the official patterns, written independently of the project."""
    if pattern == r"\S":
        return f"[^{_ECMA_SPACE}]"
    translated = pattern.replace("(?!$)", r"(?!\Z)")
    if translated.endswith("$"):
        translated = translated[:-1] + r"\Z"
    # Every other '$' must sit inside a character class, where both dialects read it literally.
    outside = re.sub(r"\[(?:\\.|[^\]\\])*\]", "", translated)
    assert "$" not in outside, pattern
    return translated


PYTHON_PATTERNS: dict[str, re.Pattern[str]] = {
    p: re.compile(_python_equivalent(p)) for p in OFFICIAL_PATTERNS
}
STOCK_FORMATS = Draft202012Validator.FORMAT_CHECKER


def _strict_format_checker() -> FormatChecker:
    checker = FormatChecker(formats=())
    checker.checks("uri")(is_protocol_id)
    checker.checks("date-time")(is_timestamp)
    return checker


def _ecma_pattern(
    validator: Any, pattern: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not PYTHON_PATTERNS[pattern].search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


StrictValidator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})


@cache
def stock(schema: str) -> Draft202012Validator:
    """The official schema as a generic Draft 2020-12 validator with format assertion runs it."""
    return Draft202012Validator(
        SCHEMA_DOCS[schema], registry=REGISTRY, format_checker=STOCK_FORMATS
    )


def _without_dialect(doc: dict[str, Any]) -> dict[str, Any]:
    # jsonschema picks the validator class from ``$schema`` again at every ``$ref`` into another
    # file; without it, the extended (strict) class stays in charge across references.
    return {k: v for k, v in doc.items() if k != "$schema"}


STRICT_REGISTRY: Registry[Any] = Registry().with_resources(
    (doc["$id"], DRAFT202012.create_resource(_without_dialect(doc))) for doc in SCHEMA_DOCS.values()
)


@cache
def strict(schema: str) -> Any:
    """The official schema with the deliberate differences applied (in every referenced file)."""
    return StrictValidator(
        _without_dialect(SCHEMA_DOCS[schema]),
        registry=STRICT_REGISTRY,
        format_checker=_strict_format_checker(),
    )


# --------------------------------------------------------------------------- differences


@dataclass(frozen=True)
class Difference:
    """A deliberate difference from a generic validator, decided string by string."""

    name: str
    why: str
    differs: Callable[[str], bool]


def _pattern_dialect_differs(text: str) -> bool:
    return any(
        (re.search(p, text) is None) != (PYTHON_PATTERNS[p].search(text) is None)
        for p in OFFICIAL_PATTERNS
    )


DELIBERATE_DIFFERENCES: tuple[Difference, ...] = (
    Difference(
        "date-time is the section 2 timestamp profile",
        "every timestamp must satisfy the Signed Document profile: no -00:00, no leap second, "
        "years 0001-9999, whole string (jsonschema's rfc3339-validator accepts -00:00 and a "
        "final line feed through its '$' anchor)",
        lambda s: STOCK_FORMATS.conforms(s, "date-time") != is_timestamp(s),
    ),
    Difference(
        "uri is RFC 3986 over the whole string",
        "section 2 requires consuming the complete string; jsonschema's rfc3987 'URI' rule is "
        "anchored with '$' and so accepts a final line feed",
        lambda s: STOCK_FORMATS.conforms(s, "uri") != is_protocol_id(s),
    ),
    Difference(
        "pattern is ECMA-262",
        "JSON Schema patterns are ECMA-262: '$' matches only at the end and '\\S' excludes "
        "ECMA-262 white space; jsonschema runs them with Python re, whose '$' also matches "
        "before a final line feed and whose '\\s' is Unicode white space",
        _pattern_dialect_differs,
    ),
)


def strings_in(node: Any) -> Iterator[str]:
    """Every string of a JSON value, member names included."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from strings_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings_in(item)


@cache
def _differences_of(text: str) -> frozenset[str]:
    return frozenset(d.name for d in DELIBERATE_DIFFERENCES if d.differs(text))


def differences_in(doc: Any) -> list[str]:
    """Names of the deliberate differences some string of ``doc`` triggers."""
    found: set[str] = set()
    for text in set(strings_in(doc)):
        found |= _differences_of(text)
    return [d.name for d in DELIBERATE_DIFFERENCES if d.name in found]


# --------------------------------------------------------------------------- extra seeds

SIG = {
    "algorithm": "Ed25519",
    "keyId": "urn:missionweaveprotocol:key:k",
    "createdAt": "2026-07-15T00:00:00Z",
    "value": "c2lnbmF0dXJl",
}
EXT = {"urn:missionweaveprotocol:profile:acme": {"version": "1.0.0", "critical": False, "data": 1}}
HASH_A = "sha256:" + "a" * 64
CAP = {"id": "acme.software.python-implementation", "version": "2.1.0"}
FULL_BUDGET = {
    "currency": "EUR",
    "financialLimit": 12.5,
    "modelTokenLimit": 10,
    "toolCallLimit": 10,
    "computeSecondsLimit": 10,
    "wallClockSecondsLimit": 10,
    "externalSideEffectLimit": 0,
}


def _with(doc: Any, drop: tuple[str, ...] = (), **changes: Any) -> Any:
    out = copy.deepcopy(doc)
    for key in drop:
        del out[key]
    out.update(copy.deepcopy(changes))
    return out


def _frame(frame_type: str, **members: Any) -> dict[str, Any]:
    return {
        "protocolVersion": "0.1",
        "frameId": "urn:uuid:00000000-0000-4000-8000-0000000000f1",
        "frameType": frame_type,
        **members,
    }


def _extra_seeds() -> list[tuple[str, str, Any]]:
    cmd = vector("command")
    human = vector("human-mission-create-command")
    service = vector("service-session-open-command")
    event = vector("event")
    org_event = vector("organization-session-opened-event")
    card = vector("agent-card")
    mission = vector("mission")
    membership = vector("membership")
    conversation = vector("conversation")
    message = vector("message")
    item = vector("work-item")
    lease = vector("lease")
    approval = vector("approval")
    presence = vector("presence-record")
    grant = {
        "grantId": "urn:missionweaveprotocol:grant:one",
        "granteeAgentId": "urn:missionweaveprotocol:agent:delegate",
        "missionId": "urn:missionweaveprotocol:mission:one",
        "groupId": "urn:missionweaveprotocol:group:mission-one",
        "targetWorkItemId": "urn:missionweaveprotocol:work-item:implementation",
        "allowedCapabilities": [CAP],
        "budget": FULL_BUDGET,
        "maxDescendantDepth": 1,
        "granteeMembershipEpoch": 2,
        "coordinatorEpoch": 4,
        "grantedBy": {"type": "agent", "id": "urn:missionweaveprotocol:agent:coordinator"},
        "grantedAt": "2026-07-15T00:00:00Z",
        "expiresAt": "2026-07-16T00:00:00Z",
    }
    return [
        (
            "command",
            "agent extension command with every optional member",
            _with(
                cmd,
                kind="ext.acme.security_review.request",
                conversationId="urn:missionweaveprotocol:conversation:c",
                workItemId="urn:missionweaveprotocol:work-item:w",
                cooperationOverrideGrantId="urn:missionweaveprotocol:grant:g",
                causedByEventId="urn:missionweaveprotocol:event:e",
                extensions=EXT,
            ),
        ),
        (
            "command",
            "human command in an existing Group",
            _with(human, kind="mission.approve", membershipEpoch=1, expectedRevision=0),
        ),
        (
            "command",
            "service mission.terminate",
            _with(
                service,
                kind="mission.terminate",
                groupId="urn:missionweaveprotocol:group:g",
            ),
        ),
        (
            "command",
            "agent mission.terminate",
            _with(cmd, kind="mission.terminate"),
        ),
        ("command", "human follow-up creation", _with(human, kind="mission.create_follow_up")),
        (
            "command",
            "service agent card registration",
            _with(service, kind="ext.missionweaveprotocol.registry.agent_card_register"),
        ),
        (
            "event",
            "Group extension event with every optional member",
            _with(
                event,
                kind="ext.acme.security_review.completed",
                workItemId="urn:missionweaveprotocol:work-item:w",
                extensions=EXT,
                cause={"type": "timer", "id": "urn:missionweaveprotocol:timer:t"},
            ),
        ),
        (
            "event",
            "agent card registered",
            _with(org_event, kind="ext.missionweaveprotocol.registry.agent_card_registered"),
        ),
        (
            "websocket-frame",
            "HELLO client_init",
            _frame(
                "HELLO",
                phase="client_init",
                agentId="urn:missionweaveprotocol:agent:worker-one",
                keyId="urn:missionweaveprotocol:key:worker-one",
                clientNonce="bm9uY2U",
                supportedVersions=["0.1"],
            ),
        ),
        (
            "websocket-frame",
            "HELLO server_challenge",
            _frame(
                "HELLO",
                phase="server_challenge",
                selectedVersion="0.1",
                clientNonce="bm9uY2U",
                serverNonce="c2VydmVy",
                challenge="Y2hhbGxlbmdl",
            ),
        ),
        (
            "websocket-frame",
            "HELLO client_response",
            _frame(
                "HELLO",
                phase="client_response",
                agentId="urn:missionweaveprotocol:agent:worker-one",
                keyId="urn:missionweaveprotocol:key:worker-one",
                clientNonce="bm9uY2U",
                serverNonce="c2VydmVy",
                challengeSignature="c2lnbmF0dXJl",
            ),
        ),
        (
            "websocket-frame",
            "HELLO server_accept",
            _frame(
                "HELLO",
                phase="server_accept",
                selectedVersion="0.1",
                sessionToken="token-0123456789abcdef",
                sessionEpoch=7,
                expiresAt="2026-07-15T01:00:00Z",
            ),
        ),
        ("websocket-frame", "COMMAND frame", _frame("COMMAND", command=cmd)),
        ("websocket-frame", "EVENT frame", _frame("EVENT", event=event)),
        (
            "websocket-frame",
            "ACK frame",
            _frame(
                "ACK",
                acknowledgements=[
                    {"groupId": "urn:missionweaveprotocol:group:mission-one", "sequence": 42}
                ],
                sentAt="2026-07-15T00:00:03Z",
            ),
        ),
        (
            "websocket-frame",
            "PING frame with presence",
            _frame(
                "PING",
                nonce="cGluZw",
                replyToNonce="cG9uZw",
                sentAt="2026-07-15T00:00:03Z",
                presence=presence,
            ),
        ),
        ("websocket-frame", "ERROR frame", _frame("ERROR", error=vector("error"))),
        (
            "websocket-frame",
            "SUBSCRIBE with conversation attention",
            _frame(
                "SUBSCRIBE",
                subscriptionId="urn:missionweaveprotocol:subscription:s",
                groups=[
                    {
                        "groupId": "urn:missionweaveprotocol:group:g",
                        "afterSequence": 0,
                        "attention": {
                            "conversationIds": ["urn:missionweaveprotocol:conversation:c"]
                        },
                    }
                ],
            ),
        ),
        (
            "agent-card",
            "card with validity, revoked key and extensions",
            _with(
                card,
                validUntil="2027-07-01T00:00:00Z",
                extensions=EXT,
                publicKeys=[
                    {
                        **card["publicKeys"][0],
                        "validUntil": "2027-01-01T00:00:00Z",
                        "revokedAt": "2026-12-01T00:00:00+01:00",
                    }
                ],
                status="deprecated",
            ),
        ),
        (
            "presence-record",
            "presence without estimate",
            _with(presence, drop=("estimatedResponseMs",), capabilityAvailability=[]),
        ),
        (
            "mission",
            "follow-up Mission with pinned profiles and a full budget",
            _with(
                mission,
                followUpToMissionId="urn:missionweaveprotocol:mission:zero",
                pinnedProfiles=[
                    {"profileUri": "urn:missionweaveprotocol:profile:acme", "majorVersion": 1}
                ],
                extensions=EXT,
                budget=FULL_BUDGET,
                state="awaiting_approval",
            ),
        ),
        (
            "group",
            "archived Group",
            _with(
                vector("group"),
                state="archived",
                archivedAt="2026-07-16T00:00:00Z",
                archiveSnapshotId="urn:missionweaveprotocol:snapshot:s",
                extensions=EXT,
            ),
        ),
        (
            "membership",
            "active Membership with a delegation grant",
            _with(
                membership,
                drop=("provisionalExpiresAt", "contextPackageId"),
                state="active",
                role="coordinator",
                activatedAt="2026-07-15T00:30:00Z",
                delegationGrants=[grant],
                extensions=EXT,
            ),
        ),
        (
            "membership",
            "ended Membership",
            _with(membership, state="ended", endedAt="2026-07-15T02:00:00Z"),
        ),
        (
            "conversation",
            "restricted Conversation",
            _with(
                conversation,
                drop=("primaryWorkItemId",),
                type="restricted",
                access={
                    "mode": "restricted",
                    "members": [{"type": "human", "id": "urn:missionweaveprotocol:human:h"}],
                },
                extensions=EXT,
            ),
        ),
        (
            "message",
            "correction with a data reference",
            _with(
                message,
                kind="correction",
                targetMessageId="urn:missionweaveprotocol:message:zero",
                reason="Typo.",
                references=["urn:missionweaveprotocol:event:e"],
                content=[
                    {
                        "type": "data_ref",
                        "schema": "https://schemas.acme.example/d.json",
                        "data": {"k": [1, None]},
                    }
                ],
                extensions=EXT,
            ),
        ),
        (
            "work-contract",
            "contract with constraints, extensions and a constrained resource",
            _with(
                vector("work-contract"),
                constraints={"region": "eu"},
                extensions=EXT,
                allowedResources=[
                    {
                        "resource": "urn:missionweaveprotocol:resource:repository",
                        "operations": ["read"],
                        "constraints": {"branch": "main"},
                    }
                ],
            ),
        ),
        (
            "work-item",
            "submitted WorkItem with progress and a declined offer",
            _with(
                item,
                state="submitted",
                offers=[{**item["offers"][0], "status": "declined", "declineReason": "capacity"}],
                progress={
                    "currentPhase": "testing",
                    "completedMilestones": ["implemented"],
                    "nextCheckpoint": "review",
                    "blockers": [],
                    "updatedCompletionEstimate": "2026-07-15T03:30:00Z",
                    "evidenceIds": ["urn:missionweaveprotocol:evidence:e"],
                },
                submission={
                    "artifactHashes": [HASH_A],
                    "evidenceIds": ["urn:missionweaveprotocol:evidence:e"],
                    "submittedAt": "2026-07-15T03:30:00Z",
                },
                extensions=EXT,
            ),
        ),
        ("artifact", "artifact with extensions", _with(vector("artifact"), extensions=EXT)),
        (
            "evidence",
            "evidence about a WorkItem by a model",
            _with(
                vector("evidence"),
                drop=("details",),
                subject={"type": "work_item", "id": "urn:missionweaveprotocol:work-item:w"},
                modelVersion="model-1",
                result="inconclusive",
            ),
        ),
        (
            "lease",
            "active Coordinator lease never renewed",
            _with(
                lease,
                drop=("workItemId", "ownershipEpoch", "lastRenewedAt", "closedAt", "closureReason"),
                leaseType="coordinator",
                coordinatorEpoch=4,
                graceExpiresAt="2026-07-15T00:55:00Z",
                state="active",
                renewalCount=0,
            ),
        ),
        (
            "lease",
            "expired ownership lease",
            _with(lease, leaseType="ownership", startBy="2026-07-15T00:40:00Z", state="expired"),
        ),
        (
            "approval",
            "revoked execution Approval",
            _with(
                approval,
                kind="work_execution",
                decision="revoked",
                workItemId="urn:missionweaveprotocol:work-item:w",
                revokesApprovalId="urn:missionweaveprotocol:approval:zero",
                artifactHashes=[],
                conditions=["Only on staging."],
            ),
        ),
        (
            "context-package",
            "second Context Package version",
            _with(
                vector("context-package"),
                version=2,
                previousContextPackageId="urn:missionweaveprotocol:context-package:v1",
                extensions=EXT,
            ),
        ),
        (
            "error",
            "error with every optional member",
            _with(
                vector("error"),
                relatedFrameId="urn:uuid:00000000-0000-4000-8000-0000000000f1",
                expectedRevision=4,
                currentRevision=5,
                retryAfterMs=100,
                snapshotArtifactHash=HASH_A,
            ),
        ),
    ]


EXTRA_SEEDS = _extra_seeds()

#: Every seed of the equivalence campaign: (schema, label, document).
SEEDS: list[tuple[str, str, Any]] = [
    (c.schema, Path(c.instance).stem, c.doc) for c in VALID_VECTORS
] + EXTRA_SEEDS


def _seed_id(seed: tuple[str, str, Any]) -> str:
    return f"{seed[0]}: {seed[1]}"


# --------------------------------------------------------------------------- corpus checks


def test_the_manifest_holds_58_cases_over_the_21_document_schemas() -> None:
    assert len(MANIFEST) == 58
    assert {c.schema for c in MANIFEST} == set(SCHEMA_NAMES)


@pytest.mark.parametrize("seed", EXTRA_SEEDS, ids=_seed_id)
def test_extra_seed_is_valid_for_the_official_schema_and_for_ours(
    seed: tuple[str, str, Any],
) -> None:
    schema, _, doc = seed
    assert [e.message for e in stock(schema).iter_errors(doc)] == []
    assert [str(p) for p in errors(schema, doc)] == []


@pytest.mark.parametrize("seed", SEEDS, ids=_seed_id)
def test_seed_contains_no_string_on_which_the_oracles_differ(seed: tuple[str, str, Any]) -> None:
    assert differences_in(seed[2]) == []


def _schema_properties(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                into.update(value)
            _schema_properties(value, into)
    elif isinstance(node, list):
        for item in node:
            _schema_properties(item, into)


def _member_names(node: Any, into: set[str]) -> None:
    if isinstance(node, dict):
        into.update(node)
        for value in node.values():
            _member_names(value, into)
    elif isinstance(node, list):
        for item in node:
            _member_names(item, into)


@pytest.mark.parametrize("schema", SCHEMA_NAMES)
def test_seeds_use_every_member_the_schema_defines(schema: str) -> None:
    defined: set[str] = set()
    _schema_properties(SCHEMA_DOCS[schema], defined)
    used: set[str] = set()
    for seed_schema, _, doc in SEEDS:
        if seed_schema == schema:
            _member_names(doc, used)
    assert defined - used == set()
