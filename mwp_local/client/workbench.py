"""The Workbench: an Organization's Group log that *you* drive, one hand-signed Command at a time.

Unlike a running Sandbox (where agents decide), at a Workbench you send each Command as any
Principal, with the epochs a well-behaved client would carry or stale ones on purpose, and see
the Authority's answer drawn (``Reply``). A Workbench either owns a fresh Group log (DuckDB, in
a temporary directory, with the example Agents and a manual clock starting at
``2026-07-15T00:00:00Z``) or works on a Sandbox's log (``Workbench.for_sandbox``): then its clock
is the sandbox's virtual clock and what it gets accepted is handed to the sandbox's agents.

Besides ``send`` it knows the usual steps of a Mission (create it, authorize, offer, accept,
start, publish and submit, review) so a cell can set up a situation in a line and spend its
attention on the one Command that matters; ``must_refuse`` sends a Command that must be refused and
proves the log did not change.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

from ..artifacts.context_packages import PackageScope, build_context_package
from ..authority import Accepted, AuthorityConfig
from ..authority.isolation import scope_covers_work
from ..authority.organization import Member
from ..examples import EXAMPLE_AGENTS, EXAMPLE_IMPLEMENT, EXAMPLE_REVIEW, example_contract
from ..protocol.jsontext import parse_strict
from ..protocol.timestamps import Timestamp, format_utc, parse_timestamp
from ..store.group_log import GroupLog
from ..store.sandbox_dir import init_directory
from .replies import Reply, UnexpectedReply
from .signing import Client, next_count, sandbox_group

#: Where a fresh Workbench's clock starts, and the Group and Mission its steps default to.
START = "2026-07-15T00:00:00Z"
GROUP = "urn:mwp-local:group:bench"
MISSION = "urn:mwp-local:mission:bench"
#: The capability the example Workers offer, and the reviewer's.
CAP = EXAMPLE_IMPLEMENT
REVIEW = EXAMPLE_REVIEW


class Workbench:
    """An Organization, its Group log and a clock you move by hand.

    ``Workbench()`` makes a fresh log in a temporary directory (``seed`` keys its Organization,
    ``config`` its Authority); ``Workbench.for_sandbox(sandbox)`` works on a Sandbox's.
    """

    def __init__(self, seed: int = 7, config: AuthorityConfig | None = None) -> None:
        directory = Path(tempfile.mkdtemp()) / "bench"
        start = parse_timestamp(START).epoch_micros
        log = init_directory(
            directory,
            seed=seed,
            now=_at(start),
            agents=EXAMPLE_AGENTS,
            humans=("mission-owner",),
        )
        if config is not None:
            log.authority.config = config
        self._attach(log, directory, None, group=GROUP, mission=MISSION)
        self._own_us = start

    @classmethod
    def for_sandbox(cls, sandbox: Any, *, group: str | None = None) -> Workbench:
        """A Workbench on ``sandbox`` (a ``mwp_local.Sandbox``): its Group log, its virtual
        clock, its blob store; every Event it gets accepted (or a timer fires while it moves
        the clock) is handed to the sandbox's agents, as the sandbox's own steps are. ``group``
        defaults to the sandbox's Group when it has exactly one."""
        bench = cls.__new__(cls)
        group = sandbox_group(sandbox, group, "Workbench.for_sandbox")
        mission = sandbox.log.state.groups[group].mission_id if group is not None else None
        bench._attach(
            sandbox.log,
            Path(sandbox.directory),
            sandbox.clock,
            group=group,
            mission=mission,
            handed=lambda accepted: sandbox.deliver([r.document for r in accepted.events]),
        )
        return bench

    def _attach(
        self,
        log: GroupLog,
        directory: Path,
        clock: Any | None,
        *,
        group: str | None,
        mission: str | None,
        handed: Any = None,
    ) -> None:
        self.log = log
        self.org = log.org
        #: The directory holding the log and its blob store (``blobs/``).
        self.directory = directory
        #: The Group and Mission the steps below default to (None: name one on each call).
        self.group, self.mission = group, mission
        #: A Sandbox's clock (``now_us()``, ``advance_to()``), or None: the Workbench's own.
        self._clock = clock
        self._own_us = 0
        self._handed = handed

    # ------------------------------------------------------------------ time and state

    @property
    def state(self) -> Any:
        """The Authority's current state (``state.work_items[...]``, ``state.memberships``…)."""
        return self.log.state

    @property
    def now_us(self) -> int:
        """The clock's instant, µs since the epoch."""
        return self._own_us if self._clock is None else int(self._clock.now_us())

    def now(self) -> Timestamp:
        """The clock's instant as a protocol timestamp."""
        return _at(self.now_us)

    def at(self, seconds_from_now: float) -> str:
        """The timestamp ``seconds_from_now`` after the clock (for deadlines and expiries)."""
        return format_utc(self.now_us + int(seconds_from_now * 1_000_000))

    def advance(self, seconds: float) -> list[Accepted]:
        """Move the clock and let the Authority's timers fire (lease and offer expiry);
        returns what they appended."""
        later = self.now_us + int(seconds * 1_000_000)
        if self._clock is None:
            self._own_us = later
        else:
            self._clock.advance_to(later)
        fired = self.log.tick(self.now())
        for accepted in fired:
            self._delivered(accepted)
        return fired

    def _delivered(self, accepted: Accepted) -> None:
        if self._handed is not None and accepted.events:
            self._handed(accepted)

    def _group(self, group: str | None, where: str) -> str:
        chosen = group or self.group
        if chosen is None:
            raise ValueError(f"Workbench.{where}: this Workbench has no Group; pass group=")
        return chosen

    # ------------------------------------------------------------------ Commands

    def client(self, who: str) -> Client:
        """A ``Client`` for Principal ``who`` (a short name such as ``worker-a`` or a full ID)
        on this Workbench's log, Group and clock."""
        return Client(
            self.log,
            self._member(who),
            group=self.group,
            clock=self.now,
            delivered=self._delivered,
            shared_ids=True,
        )

    def _member(self, who: str) -> Member:
        try:
            return self.org.get(who)
        except KeyError:
            names = sorted(m.id.rsplit(":", 1)[-1] for m in self.org.members.values())
            raise KeyError(
                f"no Principal {who!r} in this Organization (its Principals: {', '.join(names)})"
            ) from None

    def command(
        self, who: str, kind: str, payload: dict[str, Any], *, group: Any = ..., **over: Any
    ) -> bytes:
        """The signed Command bytes ``who`` would send, with the epochs a well-behaved client
        carries (``stale=("session",)`` or ``session_epoch=0`` and the like send stale ones;
        ``group=None`` sends it to the Organization). A ``work.offer`` to an Agent not yet in
        the Group carries the signed Context Package it joins with (§8) unless the payload
        says ``"contextPackage": None``."""
        target = self.group if group is ... else group
        if kind == "work.offer" and target is not None:
            payload = self._with_context_package(who, payload, target)
        return self.client(who).command(kind, payload, now=self.now(), group=target, **over)

    def _with_context_package(
        self, who: str, payload: dict[str, Any], group: str
    ) -> dict[str, Any]:
        """An offer to an Agent not yet in the Group, or whose Membership's scopes do not cover
        the WorkItem, carries the signed Context Package it receives with its new or widened
        Membership (§8), as a well-behaved Coordinator sends it; a payload that wants it missing
        says ``"contextPackage": None``."""
        if "contextPackage" in payload:
            return {k: v for k, v in payload.items() if v is not None or k != "contextPackage"}
        agents = [o.get("agentId") for o in payload.get("offers", ())] or [payload.get("agentId")]
        memberships = self.state.memberships
        wid = str(payload.get("workItemId"))
        if wid not in self.state.work_items:
            return payload
        joining = [
            a for a in agents if not scope_covers_work(memberships.get((group, a or "")), wid)
        ]
        if not joining:
            return payload
        item = self.state.work_items[wid]
        events = [parse_strict(r.document) for r in self.log.store.events(item.group_id)]
        scope = PackageScope(mission_id=item.mission_id, group_id=item.group_id, work_item_id=wid)
        package = build_context_package(
            events, scope=scope, generator=self.org.get(who), generated_at=format_utc(self.now_us)
        )
        return {**payload, "contextPackage": package}

    def send(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Reply:
        """Sign ``kind`` as ``who``, submit it, and return the Authority's answer (drawn in a
        notebook)."""
        signed = self.command(who, kind, payload, **over)
        outcome = self.log.submit(signed, self.now())
        if isinstance(outcome, Accepted):
            self._delivered(outcome)
        return Reply(kind=kind, sender=who, outcome=outcome)

    def ok(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Accepted:
        """Send a Command that must be accepted (a set-up step); its receipt."""
        return self.send(who, kind, payload, **over).accepted()

    def must_refuse(
        self, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
    ) -> Reply:
        """Send a Command that must be refused with section-19 ``code``, and check that the log
        did not change (neither its length nor its chain head)."""
        before = (self.log.store.event_count(), self.log.store.chain_head())
        reply = self.send(who, kind, payload, **over)
        reply.refused(code)
        if (self.log.store.event_count(), self.log.store.chain_head()) != before:
            raise UnexpectedReply(f"{kind} from {who} was refused, yet the log changed")
        return reply

    # ------------------------------------------------------------------ Mission steps

    def create_mission(
        self,
        budget: dict[str, Any] | None = None,
        group: str | None = None,
        mission: str | None = None,
    ) -> Accepted:
        """The mission owner creates a Mission (and its Group) coordinated by ``coordinator``."""
        group = group or self._group(None, "create_mission")
        mission = mission or self.mission or MISSION
        return self.ok(
            "mission-owner",
            "mission.create",
            {
                "missionId": mission,
                "groupId": group,
                "coordinatorAgentId": self.org.get("coordinator").id,
                "objective": "Ship a small Python feature",
                "definitionOfDone": [
                    {"criterionId": "done", "description": "Feature merged",
                     "evidenceRequired": ["human_review"]}
                ],
                "budget": budget or {"currency": "EUR", "financialLimit": 100, "toolCallLimit": 50},
                "deadline": "2026-08-01T00:00:00Z",
            },
            group=group,
        )  # fmt: skip

    def contract(self, **over: Any) -> dict[str, Any]:
        """A complete Work Contract (MWP-WRK-001); ``over`` replaces members."""
        return example_contract(**over)

    def basis(self) -> dict[str, Any]:
        """A structured selection basis (MWP-WRK-006)."""
        return {
            "authorizationEligible": True,
            "availabilityEstimate": self.at(60),
            "expectedCost": 1.5,
            "reliabilityEvidence": [],
            "policyRulesApplied": ["sequential-exclusive-offer"],
        }

    def authorize(self, wid: str, **contract_over: Any) -> Accepted:
        """The Coordinator authorizes WorkItem ``wid`` with a complete contract."""
        return self.ok(
            "coordinator",
            "work.authorize",
            {"workItemId": wid, "contract": self.contract(**contract_over)},
        )

    def offer_payload(
        self, wid: str, agent: str = "worker-a", seconds: float = 300
    ) -> dict[str, Any]:
        """A ``work.offer`` of ``wid`` to ``agent`` expiring in ``seconds``."""
        return {"workItemId": wid, "agentId": self.org.get(agent).id,
                "expiresAt": self.at(seconds), "selectionBasis": self.basis()}  # fmt: skip

    def offer(self, wid: str, agent: str = "worker-a", seconds: float = 300) -> Accepted:
        """The Coordinator offers ``wid`` to ``agent``."""
        return self.ok("coordinator", "work.offer", self.offer_payload(wid, agent, seconds))

    def take(self, wid: str, agent: str = "worker-a") -> Accepted:
        """Accept the pending offer as ``agent``."""
        item = self.state.work_items[wid]
        return self.ok(
            agent, "work.accept_offer", {"workItemId": wid}, expected_revision=item.revision
        )

    def start(self, wid: str, agent: str = "worker-a") -> Accepted:
        """``agent`` starts ``wid`` (it receives an Execution Lease)."""
        item = self.state.work_items[wid]
        return self.ok(
            agent, "work.start", {"workItemId": wid, "ownershipEpoch": item.ownership_epoch}
        )

    def active(self, wid: str, agent: str = "worker-a", **contract_over: Any) -> None:
        """Authorize, offer, accept and start ``wid``."""
        self.authorize(wid, **contract_over)
        self.offer(wid, agent)
        self.take(wid, agent)
        self.start(wid, agent)

    def lease(self, wid: str) -> dict[str, Any]:
        """What every lease-fenced Command cites: WorkItem, Ownership Epoch, current Lease ID."""
        item = self.state.work_items[wid]
        lease = item.execution_lease_id or "urn:mwp-local:lease:none-current"
        return {"workItemId": wid, "ownershipEpoch": item.ownership_epoch, "leaseId": lease}

    def progress(self) -> dict[str, Any]:
        """A structured progress report (MWP-WRK-016)."""
        return {"currentPhase": "implementing", "completedMilestones": ["design"],
                "nextCheckpoint": "tests written", "blockers": [],
                "updatedCompletionEstimate": self.at(3600), "evidenceIds": []}  # fmt: skip

    def artifact(self, wid: str, agent: str = "worker-a", content: bytes = b"patch",
                 sources: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
        """A signed manifest for ``content`` (stored in the Workbench's blob store)."""
        from ..store.blobs import BlobStore

        BlobStore(self.directory / "blobs").put(content)
        member = self.org.get(agent)
        digest = hashlib.sha256(content).hexdigest()
        manifest = {
            "artifactId": f"urn:mwp-local:artifact:{digest[:16]}",
            "contentHash": "sha256:" + digest,
            "uri": f"mwp-local://blobs/{digest}",
            "sizeBytes": len(content),
            "mediaType": "text/x-diff",
            "schemaUri": "urn:mwp-local:schema:patch",
            "producer": {"agentId": member.id, "agentCardVersion": 1,
                         "capabilities": [{"id": CAP[0], "version": CAP[1]}]},
            "missionId": self.mission, "groupId": self.group, "workItemId": wid,
            "sourceArtifactHashes": sources or [], "toolVersions": [], "modelVersions": [],
            "classification": "internal",
            "createdAt": format_utc(self.now_us),
        }  # fmt: skip
        return self.org.sign("artifact", member, manifest)

    def evidence(self, wid: str, artifact_hash: str, agent: str = "worker-a",
                 criteria: list[str] | None = None, kind: str = "deterministic_test",
                 **extra: Any) -> dict[str, Any]:  # fmt: skip
        """Signed Evidence for ``criteria`` about an Artifact (MWP-WRK-026)."""
        member = self.org.get(agent)
        doc = {
            "evidenceId": f"urn:mwp-local:evidence:{wid.rsplit(':', 1)[-1]}-{next_count(self.log)}",
            "missionId": self.mission, "groupId": self.group, "workItemId": wid, "type": kind,
            "subject": {"type": "artifact", "id": artifact_hash},
            "criterionIds": criteria or ["tests-pass"], "method": "pytest",
            "result": "passed" if kind != "failure_report" else "failed",
            "artifactHashes": [artifact_hash], "generatedBy": member.actor,
            "createdAt": format_utc(self.now_us), **extra,
        }  # fmt: skip
        return self.org.sign("evidence", member, doc)

    def submit(self, wid: str, agent: str = "worker-a", content: bytes | None = None) -> str:
        """Publish an Artifact and submit it with Evidence; returns its content hash."""
        manifest = self.artifact(wid, agent, content=content or wid.encode())
        self.ok(agent, "artifact.publish", {**self.lease(wid), "artifact": manifest})
        ev = self.evidence(wid, manifest["contentHash"], agent)
        hashes = [manifest["contentHash"]]
        submission = {**self.lease(wid), "artifactHashes": hashes, "evidence": [ev]}
        self.ok(agent, "work.submit", submission)
        return str(manifest["contentHash"])

    def review(self, wid: str, reviewer: str = "coordinator", **options: Any) -> Any:
        """The Coordinator's ordered §13.2 review of the submission of ``wid``
        (``review_submission`` over the Workbench's blobs, with a registered test that passes
        every criterion needing one); ``.accept_result_payload()`` is what
        ``work.accept_result`` carries."""
        from ..artifacts.checks import CheckOutcome, CheckRegistry
        from ..artifacts.review import review_submission
        from ..store.blobs import BlobStore

        checks = CheckRegistry()

        @checks.register("bench-tests", evidence_type="deterministic_test")
        def _tests(review: Any) -> CheckOutcome:
            return CheckOutcome(result="passed", method="the bench's test suite")  # type: ignore[arg-type]

        options.setdefault("checks", checks)
        return review_submission(
            self.state.work_items[wid],
            manifests=self.state.item_manifests(wid),
            source=BlobStore(self.directory / "blobs"),
            reviewer=self.org.get(reviewer),
            registry=self.state.registry,
            now=format_utc(self.now_us),
            **options,
        )

    def sql(self, query: str, params: dict[str, Any] | None = None) -> Any:
        """A read-only SQL query over the log's views (``$name`` parameters)."""
        from ..store.views import sql

        return sql(self.log.store, query, params)  # type: ignore[arg-type]


def _at(micros: int) -> Timestamp:
    return parse_timestamp(format_utc(micros))
