"""A small world for Authority tests: an Organization, an Authority, a manual clock, and helpers
that fill in the epochs a well-behaved client would carry (tests override them to be stale).

``every_event_is_official_and_verifies`` is the autouse fixture the test packages that build
Worlds share (their ``conftest`` imports it): after each test, every Event any World of the test
produced is valid against the official ``event.schema.json`` (and, for a kind of the sandbox's
own Extension Profile, against that profile's schema) and verifies against the Registry as
exported in the Registry-fixture format and read back."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import Accepted, Authority, AuthorityConfig, AuthorityState, Rejected
from mwp_local.authority.isolation import scope_covers_work
from mwp_local.authority.organization import Organization
from mwp_local.authority.pipeline import Outcome
from mwp_local.examples import EXAMPLE_AGENTS, EXAMPLE_IMPLEMENT, EXAMPLE_REVIEW, example_contract
from mwp_local.protocol.documents.kinds import SANDBOX_NAMESPACE
from mwp_local.protocol.registry import Registry
from mwp_local.protocol.signing import profile_for, verify_parsed
from mwp_local.protocol.tables import PROTOCOL_TABLES, StateTables
from mwp_local.protocol.timestamps import Timestamp, format_utc, parse_timestamp
from mwp_local.store.projection_rows import projection_rows

START = "2026-07-15T00:00:00Z"
CAP = EXAMPLE_IMPLEMENT
REVIEW = EXAMPLE_REVIEW
GROUP = "urn:missionweaveprotocol:group:alpha"
MISSION = "urn:missionweaveprotocol:mission:alpha"

AGENTS = EXAMPLE_AGENTS


#: Every World built during the current test (checked by ``conftest``).
CREATED: list[World] = []


@pytest.fixture(autouse=True)
def every_event_is_official_and_verifies() -> Iterator[None]:
    """After the test, check every Event of every World it built (see the module docstring)."""
    from ..official_schemas import problems, profile_problems

    CREATED.clear()
    yield
    for w in CREATED:
        exported = Registry.from_fixture(w.state.registry.to_fixture())
        for event in w.events:
            assert problems("event", event) == [], (event["kind"], problems("event", event))
            if event["kind"].startswith(SANDBOX_NAMESPACE):
                found = profile_problems(event["kind"], event["payload"])
                assert found == [], (event["kind"], found)
            verified = verify_parsed(profile_for("event"), event, exported)
            assert verified.principal.id == w.org.authority.id


class World:
    """Authority + Organization + clock, with helpers for tests."""

    def __init__(
        self,
        seed: int = 7,
        config: AuthorityConfig | None = None,
        tables: StateTables = PROTOCOL_TABLES,
    ) -> None:
        self.org = Organization.create(seed, agents=AGENTS)
        self.state = AuthorityState(
            registry=self.org.registry(), organization_id=self.org.organization_id
        )
        self.authority = Authority(
            state=self.state,
            identity=self.org.identity(),
            key_pair=self.org.authority.key_pair,
            config=config or AuthorityConfig(),
            tables=tables,
        )
        self.now_us = parse_timestamp(START).epoch_micros
        self.events: list[dict[str, Any]] = []
        self.rejections: list[Rejected] = []
        self._tick = 0
        CREATED.append(self)

    # ------------------------------------------------------------------ time

    def now(self) -> Timestamp:
        return parse_timestamp(format_utc(self.now_us))

    def advance(self, seconds: float) -> None:
        self.now_us += int(seconds * 1_000_000)

    def at(self, seconds_from_now: float) -> str:
        return format_utc(self.now_us + int(seconds_from_now * 1_000_000))

    # ------------------------------------------------------------------ commands

    def command(
        self,
        who: str,
        kind: str,
        payload: dict[str, Any],
        *,
        group: str | None = GROUP,
        **over: Any,
    ) -> bytes:
        member = self.org.get(who)
        self._tick += 1
        fields: dict[str, Any] = {"group_id": group, "issued_at": format_utc(self.now_us)}
        if member.type == "agent" and group is not None:
            agent = self.state.agents.get(member.id)
            fields["session_epoch"] = agent.session_epoch if agent else 1
        if member.type in ("agent", "human") and group is not None:
            mem = self.state.memberships.get((group, member.id))
            if mem is not None:
                fields["membership_epoch"] = mem.epoch
        mission = (
            self.state.missions.get(self.state.groups[group].mission_id)
            if group in self.state.groups
            else None
        )
        if mission is not None and member.id == mission.coordinator_agent_id:
            fields["coordinator_epoch"] = mission.coordinator_epoch
        fields["action_id"] = f"urn:uuid:00000000-0000-4000-8000-{self._tick:012d}"
        fields.update(over)
        if kind == "work.offer" and group is not None:
            payload = self._with_context_package(who, payload, group)
        return self.org.command(member, kind, payload, **fields)

    def _with_context_package(
        self, who: str, payload: dict[str, Any], group: str
    ) -> dict[str, Any]:
        """An offer to an Agent with no Membership in the Group, or whose Membership's scopes do
        not cover the WorkItem, carries the signed Context Package of its WorkItem, as a
        well-behaved Coordinator sends it (§8); a test that wants it missing says
        ``"contextPackage": None``."""
        if "contextPackage" in payload:
            if payload["contextPackage"] is None:
                payload = {k: v for k, v in payload.items() if k != "contextPackage"}
            return payload
        agents = [o.get("agentId") for o in payload.get("offers", ())] or [payload.get("agentId")]
        wid = str(payload.get("workItemId"))
        if wid not in self.state.work_items:
            return payload
        memberships = self.state.memberships
        if all(scope_covers_work(memberships.get((group, a or "")), wid) for a in agents):
            return payload
        return {**payload, "contextPackage": self.context_package(wid, who)}

    def context_package(self, wid: str | None, who: str = "coordinator") -> dict[str, Any]:
        """The signed Context Package of WorkItem ``wid`` (of the Mission's Group when None),
        generated by ``who`` now."""
        from mwp_local.artifacts.context_packages import PackageScope, build_context_package

        if wid is None:
            scope = PackageScope(mission_id=MISSION, group_id=GROUP)
        else:
            item = self.state.work_items[wid]
            scope = PackageScope(
                mission_id=item.mission_id, group_id=item.group_id, work_item_id=wid
            )
        return build_context_package(
            [e for e in self.events if e.get("groupId") == scope.group_id],
            scope=scope,
            generator=self.org.get(who),
            generated_at=format_utc(self.now_us),
        )

    def send(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Outcome:
        return self.deliver(self.command(who, kind, payload, **over))

    def deliver(self, data: bytes) -> Outcome:
        outcome = self.authority.handle(data, self.now())
        if isinstance(outcome, Accepted):
            self.events.extend(outcome.event_documents)
        else:
            self.rejections.append(outcome)
        return outcome

    def ok(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Accepted:
        outcome = self.send(who, kind, payload, **over)
        assert isinstance(outcome, Accepted), f"{kind} refused: {outcome.error!r}"
        return outcome

    def snapshot(self) -> Any:
        return (
            copy.deepcopy(projection_rows(self.state)),
            len(self.events),
            dict(self.state.receipts),
            {g: r.last_sequence for g, r in self.state.groups.items()},
        )

    def refuse(
        self, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
    ) -> Rejected:
        before = self.snapshot()
        outcome = self.send(who, kind, payload, **over)
        assert isinstance(outcome, Rejected), f"{kind} was accepted, expected {code}"
        assert outcome.error.code.value == code, f"{outcome.error!r}, expected {code}"
        assert self.snapshot() == before, "a rejected Command changed the state"
        return outcome

    # ------------------------------------------------------------------ scenario steps

    def bootstrap(self) -> None:
        for agent in self.org.agents():
            card = self.org.agent_card(agent, issued_at=START)
            self.ok(
                "control-plane",
                "ext.missionweaveprotocol.registry.agent_card_register",
                {"agentCard": card},
                group=None,
            )
            self.ok(
                "control-plane",
                "ext.missionweaveprotocol.identity.session_open",
                {"agentId": agent.id},
                group=None,
            )

    def create_mission(
        self, group: str = GROUP, mission: str = MISSION, budget: dict[str, Any] | None = None
    ) -> Accepted:
        return self.ok(
            "mission-owner",
            "mission.create",
            {
                "missionId": mission,
                "groupId": group,
                "coordinatorAgentId": self.org.get("coordinator").id,
                "objective": "Ship a small Python feature",
                "definitionOfDone": [
                    {
                        "criterionId": "done",
                        "description": "Feature merged",
                        "evidenceRequired": ["human_review"],
                    }
                ],
                "budget": budget or {"currency": "EUR", "financialLimit": 100, "toolCallLimit": 50},
                "deadline": "2026-08-01T00:00:00Z",
            },
            group=group,
        )

    def contract(self, **over: Any) -> dict[str, Any]:
        return example_contract(**over)

    def authorize(self, wid: str, **contract_over: Any) -> Accepted:
        return self.ok(
            "coordinator",
            "work.authorize",
            {"workItemId": wid, "contract": self.contract(**contract_over)},
        )

    def basis(self) -> dict[str, Any]:
        return {
            "authorizationEligible": True,
            "availabilityEstimate": self.at(60),
            "expectedCost": 1.5,
            "reliabilityEvidence": [],
            "policyRulesApplied": ["sequential-exclusive-offer"],
        }

    def offer(self, wid: str, agent: str = "worker-a", seconds: float = 300) -> Accepted:
        return self.ok(
            "coordinator",
            "work.offer",
            {
                "workItemId": wid,
                "agentId": self.org.get(agent).id,
                "expiresAt": self.at(seconds),
                "selectionBasis": self.basis(),
            },
        )

    def accept(self, wid: str, agent: str = "worker-a") -> Accepted:
        item = self.state.work_items[wid]
        return self.ok(
            agent, "work.accept_offer", {"workItemId": wid}, expected_revision=item.revision
        )

    def start(self, wid: str, agent: str = "worker-a") -> Accepted:
        item = self.state.work_items[wid]
        return self.ok(
            agent, "work.start", {"workItemId": wid, "ownershipEpoch": item.ownership_epoch}
        )

    def lease(self, wid: str) -> dict[str, Any]:
        item = self.state.work_items[wid]
        return {
            "workItemId": wid,
            "ownershipEpoch": item.ownership_epoch,
            "leaseId": item.execution_lease_id or "urn:mwp-local:lease:none-current",
        }

    def progress(self) -> dict[str, Any]:
        return {
            "currentPhase": "implementing",
            "completedMilestones": ["design"],
            "nextCheckpoint": "tests written",
            "blockers": [],
            "updatedCompletionEstimate": self.at(3600),
            "evidenceIds": [],
        }

    def artifact(
        self, wid: str, agent: str = "worker-a", content: bytes = b"patch"
    ) -> dict[str, Any]:
        import hashlib

        member = self.org.get(agent)
        manifest = {
            "artifactId": f"urn:mwp-local:artifact:{hashlib.sha256(content).hexdigest()[:16]}",
            "contentHash": "sha256:" + hashlib.sha256(content).hexdigest(),
            "uri": "file:///blobs/x",
            "sizeBytes": len(content),
            "mediaType": "text/x-diff",
            "schemaUri": "urn:mwp-local:schema:patch",
            "producer": {
                "agentId": member.id,
                "agentCardVersion": 1,
                "capabilities": [{"id": CAP[0], "version": CAP[1]}],
            },
            "missionId": MISSION,
            "groupId": GROUP,
            "workItemId": wid,
            "sourceArtifactHashes": [],
            "toolVersions": [],
            "modelVersions": [],
            "classification": "internal",
            "createdAt": format_utc(self.now_us),
        }
        return self.org.sign("artifact", member, manifest)

    def evidence(
        self,
        wid: str,
        artifact_hash: str,
        agent: str = "worker-a",
        criteria: list[str] | None = None,
        kind: str = "deterministic_test",
    ) -> dict[str, Any]:
        member = self.org.get(agent)
        doc = {
            "evidenceId": f"urn:mwp-local:evidence:{wid.rsplit(':', 1)[-1]}-{agent}-{self._tick}",
            "missionId": MISSION,
            "groupId": GROUP,
            "workItemId": wid,
            "type": kind,
            "subject": {"type": "artifact", "id": artifact_hash},
            "criterionIds": criteria or ["tests-pass"],
            "method": "pytest",
            "result": "passed" if kind != "failure_report" else "failed",
            "artifactHashes": [artifact_hash],
            "generatedBy": member.actor,
            "createdAt": format_utc(self.now_us),
        }
        self._tick += 1
        return self.org.sign("evidence", member, doc)

    def run_to_submitted(self, wid: str, agent: str = "worker-a") -> str:
        self.authorize(wid)
        self.offer(wid, agent)
        self.accept(wid, agent)
        self.start(wid, agent)
        manifest = self.artifact(wid, agent, content=wid.encode())
        self.ok(agent, "artifact.publish", {**self.lease(wid), "artifact": manifest})
        ev = self.evidence(wid, manifest["contentHash"], agent)
        self.ok(
            agent,
            "work.submit",
            {**self.lease(wid), "artifactHashes": [manifest["contentHash"]], "evidence": [ev]},
        )
        return str(manifest["contentHash"])

    # ------------------------------------------------------------------ review (§13.2)

    def review(self, wid: str, reviewer: str = "coordinator", **options: Any) -> Any:
        """The Coordinator's ordered review of the submission (``review_submission``), as the
        sandbox's Coordinator makes it; a World keeps no blobs, so its content source trusts
        the manifests, and a registered deterministic test passes for every criterion that
        requires one. ``options`` go to ``review_submission`` (``reviewer_evidence``, …)."""
        from mwp_local.artifacts.checks import CheckOutcome, CheckRegistry
        from mwp_local.artifacts.review import review_submission

        checks = CheckRegistry()

        @checks.register("world-tests", evidence_type="deterministic_test")
        def _tests(review: Any) -> CheckOutcome:
            return CheckOutcome(result="passed", method="the World's test suite")  # type: ignore[arg-type]

        options.setdefault("checks", checks)
        return review_submission(
            self.state.work_items[wid],
            manifests=self.state.item_manifests(wid),
            source=_ManifestSource(self.state.item_manifests(wid)),
            reviewer=self.org.get(reviewer),
            registry=self.state.registry,
            now=format_utc(self.now_us),
            **options,
        )

    def accept_result(self, wid: str, reviewer: str = "coordinator", **over: Any) -> Accepted:
        """Accept the submission of ``wid`` with its review (what ``work.accept_result``
        carries: the review's Evidence in the §13.2 order and the retained record)."""
        payload = self.review(wid, reviewer).accept_result_payload()
        return self.ok(reviewer, "work.accept_result", payload, **over)


class _ManifestSource:
    """A content source that takes each published manifest's word (a World stores no blobs)."""

    def __init__(self, manifests: dict[str, dict[str, Any]]) -> None:
        self.manifests = manifests

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        return b""

    def verify(self, sha256: str, *, name: str | None = None) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(size=self.manifests[sha256]["sizeBytes"])


class LoggedWorld(World):
    """A World whose Commands go through a GroupLog on a real store (decide, commit, ack).

    Its ``snapshot`` also holds what the store holds: the chain head, every projection row,
    receipts and the Events, so ``refuse`` proves a rejection left the log byte-identical.
    """

    def __init__(
        self,
        store: Any,
        seed: int = 7,
        config: AuthorityConfig | None = None,
        tables: StateTables = PROTOCOL_TABLES,
    ) -> None:
        super().__init__(seed, config, tables)
        from mwp_local.store.group_log import GroupLog

        self.log = GroupLog(self.org, store, config, tables)
        self.authority = self.log.authority
        self.state = self.log.state

    def deliver(self, data: bytes) -> Outcome:
        outcome = self.log.submit(data, self.now())
        if isinstance(outcome, Accepted):
            self.events.extend(outcome.event_documents)
        else:
            self.rejections.append(outcome)
        return outcome

    def snapshot(self) -> Any:
        from mwp_local.store.records import PROJECTIONS

        store = self.log.store
        return (
            super().snapshot(),
            store.chain_head(),
            [e.document for e in store.events()],
            sorted(r.receipt_json for r in store.receipts()),
            {t.name: store.projection_rows(t.name) for t in PROJECTIONS},
        )


#: The two places a refusal is checked: the Authority alone, and a GroupLog on a DuckDB file.
WHERE_REFUSED = ("in-memory", "duckdb")


def mission_world(where: str, directory: Path) -> World:
    """A bootstrapped World with its Mission created, on the Authority alone (``in-memory``) or
    through a GroupLog on a DuckDB file in ``directory`` (``duckdb``), where ``refuse`` also
    proves the stored log and projections byte-identical."""
    if where == "duckdb":
        from mwp_local.store.duckdb_log import DuckDBLogStore

        w: World = LoggedWorld(DuckDBLogStore(directory / "group.duckdb"))
    else:
        w = World()
    w.bootstrap()
    w.create_mission()
    return w
