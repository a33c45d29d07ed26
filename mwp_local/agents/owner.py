"""The human MissionOwner, scripted: creates its Missions, then approves the exact submitted
revision and Artifact set, or requests changes once first if the script says so (§7.1, §7.3).

In a notebook the same decisions are buttons; here a mission file's ``approval`` script decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..authority.pipeline import Outcome
from ..protocol.tables import MissionState
from ..protocol.timestamps import format_utc
from ..sim.mission_file import MissionSpec
from .base import Intent, View
from .contracts import budget_document
from .naming import agent_id, group_id, mission_id


@dataclass
class MissionOwnerPolicy:
    """Creates and approves the Missions it owns."""

    missions: list[MissionSpec]
    start_us: int
    changes_requested: set[str] = field(default_factory=set)

    def _create(self, spec: MissionSpec) -> Intent:
        budget = budget_document(spec.budget)
        return Intent(
            kind="mission.create",
            group=group_id(spec.id),
            why=f"the MissionOwner starts Mission '{spec.id}'",
            payload={
                "missionId": mission_id(spec.id),
                "groupId": group_id(spec.id),
                "coordinatorAgentId": agent_id(spec.coordinator),
                "objective": spec.objective,
                "definitionOfDone": [
                    {
                        "criterionId": "approved-deliverables",
                        "description": "Every planned WorkItem is verified and the human approves",
                        "evidenceRequired": ["human_review"],
                    }
                ],
                "budget": budget,
                "deadline": format_utc(self.start_us + spec.deadline_s * 1_000_000),
            },
        )

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Create Missions when due; answer submissions."""
        out: list[Intent] = []
        for spec in self.missions:
            mission = view.state.missions.get(mission_id(spec.id))
            if mission is None:
                if now_us >= self.start_us + spec.starts_after_s * 1_000_000:
                    out.append(self._create(spec))
                continue
            if mission.state is not MissionState.AWAITING_APPROVAL:
                continue
            if spec.approval == "request_changes_once" and spec.id not in self.changes_requested:
                out.append(
                    Intent(
                        kind="mission.request_changes",
                        group=mission.group_id,
                        why="the MissionOwner reviews the submission and asks for one change",
                        payload={"reason": "Please add user-facing documentation."},
                        tag=spec.id,
                    )
                )
                continue
            approval = view.sign(
                "approval",
                {
                    "approvalId": f"urn:mwp-local:approval:{spec.id}:r{mission.submitted_revision}",
                    "kind": "mission_final",
                    "decision": "approved",
                    "missionId": mission.mission_id,
                    "groupId": mission.group_id,
                    "missionRevision": mission.submitted_revision,
                    "artifactHashes": sorted(mission.submitted_artifacts),
                    "acceptancePolicyVersion": "1.0.0",
                    "approver": view.member.actor,
                    "comments": "Reviewed the submitted Artifacts and the review Evidence.",
                    "conditions": [],
                    "occurredAt": format_utc(now_us),
                },
            )
            out.append(
                Intent(
                    kind="mission.approve",
                    group=mission.group_id,
                    why="the MissionOwner approves the exact submitted revision and Artifacts",
                    payload={"approval": approval},
                    overrides={"expected_revision": mission.revision},
                )
            )
        return out

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Remember a change request once it is accepted."""
        if intent.kind == "mission.request_changes" and outcome.ok:
            self.changes_requested.add(intent.tag)

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """The next Mission start, if any is still to come."""
        pending = [
            self.start_us + s.starts_after_s * 1_000_000
            for s in self.missions
            if mission_id(s.id) not in view.state.missions
            and self.start_us + s.starts_after_s * 1_000_000 > now_us
        ]
        return min(pending) if pending else None
