"""A lab bench for the concept notebooks: one Group log on a DuckDB file that you drive by hand.

Unlike the Sandbox (where agents decide), here *you* send each Command, as any Principal, with
the epochs a well-behaved client would carry (override them to be stale). ``accept`` and
``refuse`` send a Command and show what the Group Authority answered, tagged with the MWP-WRK
requirement the cell demonstrates; ``refuse`` also proves the log did not change. ``show`` tags
a demonstration that is not a single Command (a Worker's inbox, the Scheduler, the blob store).

Notebook support code, not part of the library: it lives beside the notebooks.
"""

from __future__ import annotations

import hashlib
import tempfile
from html import escape
from pathlib import Path
from typing import Any

from mwp_local.artifacts.context_packages import PackageScope, build_context_package
from mwp_local.authority import Accepted, AuthorityConfig
from mwp_local.authority.pipeline import Outcome
from mwp_local.examples import EXAMPLE_AGENTS, EXAMPLE_IMPLEMENT, EXAMPLE_REVIEW, example_contract
from mwp_local.render.html import STYLE, rejection_html
from mwp_local.protocol.ids import derived_uuid
from mwp_local.protocol.timestamps import Timestamp, format_utc, parse_timestamp
from mwp_local.store.sandbox_dir import init_directory

START = "2026-07-15T00:00:00Z"
CAP = EXAMPLE_IMPLEMENT
REVIEW = EXAMPLE_REVIEW
GROUP = "urn:mwp-local:group:bench"
MISSION = "urn:mwp-local:mission:bench"
AGENTS = EXAMPLE_AGENTS

#: Every requirement shown in this kernel: ID → {"accepted", "rejected"}.
SHOWN: dict[str, set[str]] = {}


class Shown:
    """One demonstration: the requirement, the verdict, and what to look at."""

    def __init__(self, req: str, verdict: str, body: str, outcome: Any = None) -> None:
        self.req, self.verdict, self.body, self.outcome = req, verdict, body, outcome
        SHOWN.setdefault(req, set()).add(verdict)

    def _repr_html_(self) -> str:
        colour = "#2ca02c" if self.verdict == "accepted" else "#d62728"
        return (
            f'{STYLE}<div class="mwp" style="border-left:4px solid {colour};padding-left:8px">'
            f"<b>{escape(self.req)}</b> shown <b>{escape(self.verdict)}</b>{self.body}</div>"
        )


def show(req: str, verdict: str, what: str) -> Shown:
    """Tag a demonstration that is not one Command (``verdict``: accepted or rejected)."""
    assert verdict in ("accepted", "rejected")
    return Shown(req, verdict, f"<div>{escape(what)}</div>")


def coverage() -> Shown | str:
    """What this notebook showed, per requirement."""
    rows = "".join(
        f"<tr><td>{escape(r)}</td><td>{', '.join(sorted(v))}</td></tr>"
        for r, v in sorted(SHOWN.items())
    )
    return _Html(f"{STYLE}<div class='mwp'><table><tr><th>requirement</th><th>shown</th></tr>"
                 f"{rows}</table></div>")  # fmt: skip


class _Html:
    def __init__(self, html: str) -> None:
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


class Bench:
    """An Organization, its Group log (DuckDB, in a temporary directory) and a manual clock."""

    def __init__(self, seed: int = 7, config: AuthorityConfig | None = None) -> None:
        self.directory = Path(tempfile.mkdtemp()) / "bench"
        self.now_us = parse_timestamp(START).epoch_micros
        self.log = init_directory(
            self.directory, seed=seed, now=self.now(), agents=AGENTS, humans=("mission-owner",)
        )
        if config is not None:
            self.log.authority.config = config
        self.org = self.log.org
        self._tick = 0
        #: Every accepted Event, for the Context Packages offers carry.
        self.events: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ time and state

    @property
    def state(self) -> Any:
        return self.log.state

    def now(self) -> Timestamp:
        return parse_timestamp(format_utc(self.now_us))

    def advance(self, seconds: float) -> None:
        """Move the clock (and let the Authority's timers fire: lease expiry)."""
        self.now_us += int(seconds * 1_000_000)
        for accepted in self.log.tick(self.now()):
            self.events.extend(accepted.event_documents)

    def at(self, seconds_from_now: float) -> str:
        return format_utc(self.now_us + int(seconds_from_now * 1_000_000))

    # ------------------------------------------------------------------ Commands

    def command(
        self, who: str, kind: str, payload: dict[str, Any], *, group: str | None = GROUP, **over: Any
    ) -> bytes:
        """The signed Command bytes, with the epochs a well-behaved client carries."""
        member = self.org.get(who)
        self._tick += 1
        state = self.state
        fields: dict[str, Any] = {"group_id": group, "issued_at": format_utc(self.now_us)}
        if member.type == "agent" and group is not None:
            agent = state.agents.get(member.id)
            fields["session_epoch"] = agent.session_epoch if agent else 1
        if member.type in ("agent", "human") and group is not None:
            membership = state.memberships.get((group, member.id))
            if membership is not None:
                fields["membership_epoch"] = membership.epoch
        if group in state.groups:
            mission = state.missions[state.groups[group].mission_id]
            if member.id == mission.coordinator_agent_id:
                fields["coordinator_epoch"] = mission.coordinator_epoch
        # in the Organization's scope, as every identifier the sandbox derives (§2)
        fields["action_id"] = derived_uuid(self.org.organization_id, "bench", str(self._tick))
        fields.update(over)
        if kind == "work.offer" and group is not None:
            payload = self._with_context_package(who, payload, group)
        return self.org.command(member, kind, payload, **fields)

    def _with_context_package(self, who: str, payload: dict[str, Any], group: str) -> dict[str, Any]:
        """An offer to an Agent not yet in the Group carries the signed Context Package it
        receives with its provisional Membership (§8), as a well-behaved Coordinator sends it;
        a cell that wants it missing says ``"contextPackage": None``."""
        if "contextPackage" in payload:
            return {k: v for k, v in payload.items() if v is not None or k != "contextPackage"}
        agents = [o.get("agentId") for o in payload.get("offers", ())] or [payload.get("agentId")]
        joining = [a for a in agents
                   if (m := self.state.memberships.get((group, a or ""))) is None or m.state == "ended"]  # fmt: skip
        wid = payload.get("workItemId")
        if not joining or wid not in self.state.work_items:
            return payload
        item = self.state.work_items[wid]
        package = build_context_package(
            [e for e in self.events if e.get("groupId") == item.group_id],
            scope=PackageScope(mission_id=item.mission_id, group_id=item.group_id, work_item_id=wid),
            generator=self.org.get(who), generated_at=format_utc(self.now_us),
        )  # fmt: skip
        return {**payload, "contextPackage": package}

    def send(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Outcome:
        outcome = self.log.submit(self.command(who, kind, payload, **over), self.now())
        if isinstance(outcome, Accepted):
            self.events.extend(outcome.event_documents)
        return outcome

    def ok(self, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Accepted:
        """Send a Command that must be accepted (a set-up step, shown nowhere)."""
        outcome = self.send(who, kind, payload, **over)
        assert isinstance(outcome, Accepted), f"{kind} refused: {outcome.error!r}"
        return outcome

    def accept(self, req: str, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Shown:
        """Send a Command, expect it accepted, and show its Events."""
        outcome = self.ok(who, kind, payload, **over)
        items = "".join(
            f"<li><code>#{e.get('sequence', '')} {escape(e['kind'])}</code></li>"
            for e in outcome.event_documents
        )
        body = (
            f"<div><code>{escape(kind)}</code> from <b>{escape(who)}</b>: "
            f'<span class="ok">ACCEPTED</span></div><ul>{items}</ul>'
        )
        return Shown(req, "accepted", body, outcome)

    def refuse(
        self, req: str, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
    ) -> Shown:
        """Send a Command, expect it refused with ``code``, prove nothing changed, show why."""
        before = (self.log.store.event_count(), self.log.store.chain_head())
        outcome = self.send(who, kind, payload, **over)
        assert not outcome.ok, f"{kind} was accepted, expected {code}"
        error = outcome.error  # type: ignore[union-attr]
        assert error.code.value == code, f"{error!r}, expected {code}"
        assert (self.log.store.event_count(), self.log.store.chain_head()) == before
        body = (
            f"<div><code>{escape(kind)}</code> from <b>{escape(who)}</b>:</div>"
            + rejection_html(error.code.value, error.explanation, error.rule)
            + "<div><small>the log is unchanged</small></div>"
        )
        return Shown(req, "rejected", body, outcome)

    # ------------------------------------------------------------------ scenario steps

    def create_mission(
        self, budget: dict[str, Any] | None = None, group: str = GROUP, mission: str = MISSION
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
        return self.ok(
            "coordinator", "work.authorize", {"workItemId": wid, "contract": self.contract(**contract_over)}
        )

    def offer_payload(self, wid: str, agent: str = "worker-a", seconds: float = 300) -> dict[str, Any]:
        return {"workItemId": wid, "agentId": self.org.get(agent).id,
                "expiresAt": self.at(seconds), "selectionBasis": self.basis()}  # fmt: skip

    def offer(self, wid: str, agent: str = "worker-a", seconds: float = 300) -> Accepted:
        return self.ok("coordinator", "work.offer", self.offer_payload(wid, agent, seconds))

    def take(self, wid: str, agent: str = "worker-a") -> Accepted:
        """Accept the pending offer as ``agent``."""
        item = self.state.work_items[wid]
        return self.ok(agent, "work.accept_offer", {"workItemId": wid}, expected_revision=item.revision)

    def start(self, wid: str, agent: str = "worker-a") -> Accepted:
        item = self.state.work_items[wid]
        return self.ok(agent, "work.start", {"workItemId": wid, "ownershipEpoch": item.ownership_epoch})

    def active(self, wid: str, agent: str = "worker-a", **contract_over: Any) -> None:
        """Authorize, offer, accept and start ``wid``."""
        self.authorize(wid, **contract_over)
        self.offer(wid, agent)
        self.take(wid, agent)
        self.start(wid, agent)

    def lease(self, wid: str) -> dict[str, Any]:
        """What every lease-fenced Command cites: WorkItem, Ownership Epoch, current Lease ID."""
        item = self.state.work_items[wid]
        return {"workItemId": wid, "ownershipEpoch": item.ownership_epoch,
                "leaseId": item.execution_lease_id or "urn:mwp-local:lease:none-current"}  # fmt: skip

    def progress(self) -> dict[str, Any]:
        """A structured progress report (MWP-WRK-016)."""
        return {"currentPhase": "implementing", "completedMilestones": ["design"],
                "nextCheckpoint": "tests written", "blockers": [],
                "updatedCompletionEstimate": self.at(3600), "evidenceIds": []}  # fmt: skip

    def artifact(self, wid: str, agent: str = "worker-a", content: bytes = b"patch",
                 sources: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
        """A signed manifest for ``content`` (stored in the bench's blob store)."""
        from mwp_local.store.blobs import BlobStore

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
            "missionId": MISSION, "groupId": GROUP, "workItemId": wid,
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
        self._tick += 1
        doc = {
            "evidenceId": f"urn:mwp-local:evidence:{wid.rsplit(':', 1)[-1]}-{self._tick}",
            "missionId": MISSION, "groupId": GROUP, "workItemId": wid, "type": kind,
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
        self.ok(agent, "work.submit",
                {**self.lease(wid), "artifactHashes": [manifest["contentHash"]], "evidence": [ev]})  # fmt: skip
        return str(manifest["contentHash"])

    def review(self, wid: str, reviewer: str = "coordinator", **options: Any) -> Any:
        """The Coordinator's ordered §13.2 review of the submission of ``wid``
        (``review_submission`` over the bench's blobs, with a registered test that passes every
        criterion needing one); ``.accept_result_payload()`` is what ``work.accept_result``
        carries."""
        from mwp_local.artifacts.checks import CheckOutcome, CheckRegistry
        from mwp_local.artifacts.review import review_submission
        from mwp_local.store.blobs import BlobStore

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
        from mwp_local.store.views import sql

        return sql(self.log.store, query, params)
