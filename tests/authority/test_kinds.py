"""Kinds (§15.1, §15.2, §18): the reference core's extension kinds go by the reference
implementation's names, the kinds the sandbox invents live in its own ``ext.mwp-local.sandbox``
namespace under a declared, Organization-approved Extension Profile that every Group pins, and
a Command of a kind the Authority does not implement is refused with the code a reference
Worker would see: ``INVALID_COMMAND`` for a name in a vocabulary this Authority knows whole (the
core, ``ext.missionweaveprotocol.*``, its own profile), ``UNKNOWN_CRITICAL_EXTENSION`` for a kind
of another Organization's profile. Every refusal changes nothing (``World.refuse``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.organization import Organization
from mwp_local.protocol.documents.kinds import (
    FORMER_KINDS,
    REFERENCE_NAMESPACE,
    SANDBOX_NAMESPACE,
    ExtensionCommandKind,
    ExtensionEventKind,
)
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.hashing import sha256_id
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.profiles import PROFILES, SANDBOX_PROFILE
from mwp_local.protocol.signing import profile_for, verify_parsed
from mwp_local.protocol.timestamps import parse_timestamp
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog
from mwp_local.store.sandbox_dir import init_directory

from ..official_schemas import problems, profile_problems
from .world import GROUP, MISSION, WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
XC = ExtensionCommandKind
XE = ExtensionEventKind

#: The reference implementation's names for the Organization-owned Commands and facts of §15.
REFERENCE_NAMES = {
    "ext.missionweaveprotocol.registry.agent_card_register",
    "ext.missionweaveprotocol.identity.session_open",
    "ext.missionweaveprotocol.core.work_dependency_add",
    "ext.missionweaveprotocol.core.work_execution_lease_renew",
    "ext.missionweaveprotocol.core.resource_usage_record",
    "ext.missionweaveprotocol.core.group_archive",
    "ext.missionweaveprotocol.registry.agent_card_registered",
    "ext.missionweaveprotocol.identity.session_opened",
    "ext.missionweaveprotocol.core.work_execution_lease_revoked",
    "ext.missionweaveprotocol.core.resource_usage_recorded",
}


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _active(world: World, wid: str = WID) -> None:
    world.authorize(wid)
    world.offer(wid)
    world.accept(wid)
    world.start(wid)


# --------------------------------------------------------------------------- the vocabularies


def test_every_extension_kind_is_the_reference_cores_or_the_sandbox_profiles() -> None:
    kinds = {str(k) for k in (*XC, *XE)}
    reference = {k for k in kinds if k.startswith(REFERENCE_NAMESPACE)}
    assert reference <= REFERENCE_NAMES
    sandbox = kinds - reference
    assert all(k.startswith(SANDBOX_NAMESPACE) for k in sandbox)
    assert sandbox == {*SANDBOX_PROFILE.command_kinds, *SANDBOX_PROFILE.event_kinds}


def test_no_former_name_is_a_kind_any_more() -> None:
    kinds = {str(k) for k in (*XC, *XE)}
    assert kinds.isdisjoint(FORMER_KINDS)
    assert set(FORMER_KINDS.values()) <= kinds


# --------------------------------------------------------------------------- reference names


@pytest.mark.req("MWP-WRK-013")
def test_a_lease_renewal_under_the_reference_name_is_accepted(world: World) -> None:
    _active(world)
    accepted = world.ok("worker-a", XC.WORK_EXECUTION_LEASE_RENEW, world.lease(WID))
    assert [e["kind"] for e in accepted.event_documents] == ["work.progressed"]


@pytest.mark.req("MWP-WRK-007")
def test_a_dependency_under_the_reference_name_is_accepted(world: World) -> None:
    world.authorize("urn:mwp-local:work:a")
    world.authorize("urn:mwp-local:work:b")
    accepted = world.ok(
        "coordinator",
        XC.WORK_DEPENDENCY_ADD,
        {"workItemId": "urn:mwp-local:work:b", "dependsOn": ["urn:mwp-local:work:a"]},
    )
    assert [e["kind"] for e in accepted.event_documents] == ["work.contract.revised"]


@pytest.mark.req("MWP-WRK-014")
def test_a_replacement_session_revokes_under_the_reference_name(world: World) -> None:
    _active(world)
    accepted = world.ok(
        "control-plane", XC.SESSION_OPEN, {"agentId": world.org.get("worker-a").id}, group=None
    )
    assert accepted.event_documents[-1]["kind"] == XE.WORK_EXECUTION_LEASE_REVOKED


# --------------------------------------------------------------------------- refused kinds


def _former_payload(world: World, kind: str) -> dict[str, Any]:
    if "lease_renew" in kind:
        _active(world)
        return world.lease(WID)
    if "dependency" in kind:
        world.authorize(WID)
        return {"workItemId": WID, "dependsOn": []}
    return {"artifactHash": "sha256:" + "1" * 64, "reason": "reuse", "classification": "public"}


@pytest.mark.parametrize(
    "former",
    [
        "ext.missionweaveprotocol.core.execution_lease_renew",
        "ext.missionweaveprotocol.core.dependency_insert",
        "ext.missionweaveprotocol.knowledge.publish",
        "ext.missionweaveprotocol.knowledge.forward",
    ],
)
def test_a_former_sandbox_name_is_refused_as_an_invalid_command(world: World, former: str) -> None:
    who = {"lease": "worker-a", "dependency": "coordinator"}
    sender = next((a for key, a in who.items() if key in former), "control-plane")
    rejected = world.refuse("INVALID_COMMAND", sender, former, _former_payload(world, former))
    assert FORMER_KINDS[former] in rejected.error.explanation
    assert rejected.error.details == {"kind": former, "use": FORMER_KINDS[former]}
    assert "nothing was changed" in rejected.error.explanation


def test_an_unknown_kind_of_the_reference_core_is_an_invalid_command(world: World) -> None:
    kind = "ext.missionweaveprotocol.core.work_offer_decline"
    rejected = world.refuse("INVALID_COMMAND", "coordinator", kind, {"workItemId": WID})
    assert "reference core" in rejected.error.explanation
    assert rejected.error.details == {"kind": kind}


def test_an_unknown_kind_of_the_sandbox_profile_is_an_invalid_command(world: World) -> None:
    world.refuse("INVALID_COMMAND", "coordinator", "ext.mwp-local.sandbox.knowledge_delete", {})


def test_a_kind_of_another_organizations_profile_is_an_unknown_critical_extension(
    world: World,
) -> None:
    kind = "ext.acme.security_review.request"
    rejected = world.refuse("UNKNOWN_CRITICAL_EXTENSION", "coordinator", kind, {"scope": "all"})
    assert rejected.error.details == {"kind": kind}


def test_a_sandbox_command_in_a_group_that_does_not_pin_its_profile_is_refused() -> None:
    world = World()
    world.authority.identity = type(world.authority.identity)(
        organization_id=world.org.organization_id,
        authority_id=world.org.authority.id,
        authority_key_id=world.org.authority.key_id,
        control_services=world.authority.identity.control_services,
        profiles=(),
    )
    world.bootstrap()
    world.create_mission()
    mission = world.state.missions[MISSION].document
    assert "pinnedProfiles" not in mission
    rejected = world.refuse(
        "UNKNOWN_CRITICAL_EXTENSION",
        "control-plane",
        XC.KNOWLEDGE_PUBLISH,
        {"artifactHash": "sha256:" + "1" * 64, "classification": "public", "reason": "reuse"},
    )
    assert rejected.error.details["profile"] == SANDBOX_PROFILE.uri


# --------------------------------------------------------------------------- the profiles


def test_every_group_pins_the_profiles_its_authority_uses(world: World) -> None:
    mission = world.state.missions[MISSION].document
    assert mission["pinnedProfiles"] == [PROFILES[uri].pin() for uri in sorted(PROFILES)]
    assert SANDBOX_PROFILE.pin() == {"profileUri": SANDBOX_PROFILE.uri, "majorVersion": 1}
    assert problems("mission", mission) == []


def test_the_organization_approves_each_profile_with_a_signed_official_document() -> None:
    org = Organization.create(3)
    docs = org.extension_profiles()
    assert [d["profileUri"] for d in docs] == sorted(PROFILES)
    for doc in docs:
        assert problems("extension-profile", doc) == []
        verified = verify_parsed(profile_for("extension-profile"), doc, org.registry())
        assert verified.principal.id == org.control_plane.id
        profile = PROFILES[doc["profileUri"]]
        assert doc["schemaHash"] == sha256_id(canonicalize(dict(profile.schema)))
        assert doc["overridesCoreInvariants"] is False
    sandbox = next(d for d in docs if d["profileUri"] == SANDBOX_PROFILE.uri)
    assert sandbox["critical"] is True
    assert sandbox["commandKinds"] == [XC.KNOWLEDGE_PUBLISH, XC.KNOWLEDGE_FORWARD]
    assert XE.LEASE_EXPIRED in sandbox["eventKinds"]


def test_a_lease_expiry_event_conforms_to_the_sandbox_profile(world: World) -> None:
    _active(world)
    world.advance(world.authority.config.execution_lease_us / 1e6)
    (expired,) = world.authority.expire(world.now())
    event = expired.event_documents[0]
    assert event["kind"] == XE.LEASE_EXPIRED
    assert profile_problems(event["kind"], event["payload"]) == []


def test_the_organization_file_declares_the_approved_profiles(tmp_path: Path) -> None:
    log = init_directory(tmp_path, seed=4, now=parse_timestamp("2026-07-15T00:00:00Z"))
    log.store.close()
    described = json.loads((tmp_path / "organization.json").read_text())
    assert described["extensionProfiles"] == log.org.extension_profiles()


# --------------------------------------------------------------------------- import


def test_an_imported_event_of_a_former_kind_is_refused(tmp_path: Path) -> None:
    world = World()
    world.bootstrap()
    world.create_mission()
    _active(world)
    world.advance(world.authority.config.execution_lease_us / 1e6)
    (expired,) = world.authority.expire(world.now())
    events = [*world.events, *expired.event_documents]
    old = dict(events[-1], kind="ext.missionweaveprotocol.core.lease_expired")
    old.pop("signature")
    forged = world.org.sign("event", world.org.authority, old)
    target = GroupLog(world.org, DuckDBLogStore(tmp_path / "group.duckdb"))
    lines = [canonicalize(e) for e in [*events[:-1], forged]]
    with pytest.raises(ProtocolError, match="lease_expired") as caught:
        target.import_events(lines)
    assert caught.value.code.value == "PROTOCOL_VIOLATION"
    assert XE.LEASE_EXPIRED in str(caught.value)
    assert list(target.store.events()) == [] and GROUP not in target.state.groups
    target.store.close()
