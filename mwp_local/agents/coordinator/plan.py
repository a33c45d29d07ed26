"""The Coordinator's planning of an evolving WorkItem graph (§7.3, §10.4, §14, MWP-WRK-007).

Owns what to authorize and when: the WorkItems a mission file declares, authorized as soon as
their dependencies exist and their discoverers (``discovered_after``) are verified, so execution
starts before the graph is complete; corrective WorkItems after a change request (earlier
submissions are never deleted); Worker proposals it accepts (``work.authorize`` citing the
proposal, then ``…work_dependency_add`` into the WorkItems the proposal says need it, unless that
would close a cycle); child Missions for promoted WorkItems (``mission.create_child``) and their
approval as child MissionOwner; and the submission of the Mission for Approval with the exact
Artifact set. Pure functions of the view; nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# The Authority package loads before ``artifacts`` (whose package imports the Authority back).
from ... import authority as _authority  # noqa: F401
from ...artifacts.review import reviews_for_approval
from ...authority.model import MissionRecord, WorkItemRecord
from ...protocol.documents import validate
from ...protocol.errors import ProtocolError
from ...protocol.tables import MissionState, WorkItemState
from ...protocol.timestamps import format_utc, parse_timestamp
from ..base import Intent, View
from ..dag import closes_cycle
from ..naming import agent_id, group_id, mission_id, proposal_item_id, short, work_item_id
from ..specs import MissionSpec, WorkSpec
from .contracts import budget_document, constraints_of, review_of, work_contract
from .index import epoch_us
from .offers import capability_matches

W = WorkItemState
PROPOSAL_DECISION_SCHEMA = "urn:mwp-local:schema:proposal-decision"
#: Contract ``constraints`` member of a proposal: existing WorkItems that need the new one first.
REQUIRED_BY = "requiredBy"
_INSERTABLE = (W.OPEN, W.OFFERED, W.QUEUED, W.BLOCKED)


@dataclass
class PlanBook:
    """What the Coordinator remembers about its plan between decisions."""

    #: Mission spec id → rounds of corrective work planned after change requests.
    rework: dict[str, int] = field(default_factory=dict)
    #: Mission spec id → the submitted revision whose change request was planned for.
    replanned_for: dict[str, int] = field(default_factory=dict)
    #: Proposal ID → "authorized" or "declined".
    proposals: dict[str, str] = field(default_factory=dict)
    #: New WorkItem ID → existing WorkItems still to make depend on it.
    inserts: dict[str, list[str]] = field(default_factory=dict)
    #: Child Mission ID → the reviews the Coordinator saw when it approved it (as its owner).
    child_reviews: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Child Mission ID → its ``work.result.accepted`` Events (observed).
    child_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: WorkItems whose last failure its owner reported as permanent (no retry can help).
    permanent: set[str] = field(default_factory=set)


def final_works(spec: MissionSpec) -> list[WorkSpec]:
    """The mission file's WorkItems that nothing depends on (in file order)."""
    needed = {d for w in spec.work for d in w.depends_on}
    return [w for w in spec.work if w.id not in needed]


@dataclass
class Planned:
    """A Mission's planned WorkItems for one number of rework rounds, computed once."""

    spec: MissionSpec
    rework: int
    works: list[WorkSpec]
    #: Short WorkItem ID → its WorkSpec.
    by_id: dict[str, WorkSpec]
    #: Short WorkItem ID → the mission file's WorkSpec of that ID (``spec.work_spec``).
    declared: dict[str, WorkSpec]
    #: The WorkItem IDs of ``works``.
    ids: frozenset[str]
    #: The planned WorkItems not authorized yet, as last seen (WorkItems are never deleted, so
    #: once authorized a WorkItem leaves this list for good).
    pending: list[WorkSpec]
    #: How many of ``works`` were discovered while the Mission runs (they come last).
    found: int = 0

    @classmethod
    def of(
        cls,
        spec: MissionSpec,
        rework: int,
        works: list[WorkSpec] | None = None,
        discovered: tuple[WorkSpec, ...] = (),
    ) -> Planned:
        """The plan of ``spec`` after ``rework`` rounds of corrective work (``works``: that
        plan, when the Coordinator's ``plan`` hook made it), with the WorkItems ``discovered``
        while the Mission runs."""
        works = [*(planned(spec, rework) if works is None else works), *discovered]
        return cls(
            spec=spec,
            rework=rework,
            works=works,
            by_id={w.id: w for w in works},
            # the first of an ID wins
            declared={w.id: w for w in reversed([*spec.work, *discovered])},
            ids=frozenset(work_item_id(spec.id, w.id) for w in works),
            pending=list(works),
            found=len(discovered),
        )

    def unauthorized(self, items: Mapping[str, WorkItemRecord]) -> list[WorkSpec]:
        """The planned WorkItems not in ``items`` yet, in plan order."""
        sid = self.spec.id
        self.pending = [w for w in self.pending if work_item_id(sid, w.id) not in items]
        return self.pending


def planned(spec: MissionSpec, rework: int) -> list[WorkSpec]:
    """The mission file's WorkItems plus ``rework`` rounds of corrective work on the final ones."""
    works = list(spec.work)
    final = final_works(spec)
    for n in range(1, rework + 1):
        for f in final:
            works.append(
                WorkSpec(
                    id=f"{f.id}-rework-{n}",
                    goal=f"Address the MissionOwner's change request on '{f.id}'",
                    capability=f.capability,
                    depends_on=(f.id,) if n == 1 else (f"{f.id}-rework-{n - 1}",),
                    duration_s=max(60, f.duration_s // 2),
                    urgency="high",
                    budget=dict(f.budget),
                    reviewed_by=f.reviewed_by,
                    # the corrective work keeps the original's contract terms
                    risk=f.risk,
                    approval=f.approval,
                    checkpoints=f.checkpoints,
                    max_attempts=f.max_attempts,
                )
            )
    return works


def rework_rounds(spec: MissionSpec, items: Mapping[str, WorkItemRecord]) -> int:
    """How many rounds of corrective work the log already shows (for a new Coordinator)."""
    rounds = 0
    final = final_works(spec)
    while final and all(
        work_item_id(spec.id, f"{f.id}-rework-{rounds + 1}") in items for f in final
    ):
        rounds += 1
    return rounds


def item_deadline_us(
    spec: MissionSpec, work: WorkSpec, mission: MissionRecord, start_us: int
) -> int:
    """A WorkItem's deadline: its own (or the Mission's) offset, never after the Mission's."""
    own = start_us + (work.deadline_s or spec.deadline_s) * 1_000_000
    return min(own, epoch_us(mission.deadline))


def authorizations(
    spec: MissionSpec,
    works: list[WorkSpec],
    items: Mapping[str, WorkItemRecord],
    mission: MissionRecord,
    start_us: int,
) -> Iterator[Intent]:
    """``work.authorize`` for every declared WorkItem that has been discovered and whose
    dependencies exist (an evolving DAG: the graph grows while the Mission runs)."""
    for work in works:
        wid = work_item_id(spec.id, work.id)
        if wid in items:
            continue
        discovered = all(
            (d := items.get(work_item_id(spec.id, a))) is not None and d.state is W.VERIFIED
            for a in work.discovered_after
        )
        deps = [work_item_id(spec.id, d) for d in work.depends_on]
        if not discovered or any(d not in items for d in deps):
            continue
        deadline = item_deadline_us(spec, work, mission, start_us)
        yield Intent(
            kind="work.authorize",
            group=mission.group_id,
            why=f"the Coordinator plans '{work.id}'"
            + (
                f" (discovered after {', '.join(work.discovered_after)})"
                if work.discovered_after
                else ""
            ),
            payload={
                "workItemId": wid,
                "contract": work_contract(work, dependencies=deps, deadline_us=deadline),
            },
        )


# --------------------------------------------------------------------------- proposals


def _free_budget(view: View, mission: MissionRecord) -> dict[str, float]:
    ledger = view.state.budgets.get(("mission", mission.mission_id))
    if ledger is None:
        return {}
    return {d: limit - ledger.allocated.get(d, 0) for d, limit in ledger.limits.items()}


def judge_proposal(
    view: View,
    proposal: Mapping[str, Any],
    mission: MissionRecord,
    items: Mapping[str, WorkItemRecord],
) -> list[str]:
    """Why a Worker's proposal cannot be authorized as it stands (empty: it can)."""
    from ...authority.budgets import limits_of

    contract = proposal.get("contract")
    if contract is None:
        return ["it carries no Work Contract (prose cannot replace contract fields)"]
    try:
        validate("work-contract", contract)
    except ProtocolError as exc:
        return [f"its Work Contract is incomplete: {exc.explanation}"]
    problems = []
    deps = list(contract["dependencyWorkItemIds"])
    unknown = [d for d in deps if d not in items]
    if unknown:
        problems.append(f"it depends on unknown WorkItems {unknown}")
    capable = [
        a
        for a in view.state.agents.values()
        if a.agent_id != view.me
        and a.session_epoch > 0
        and capability_matches(a, contract["requiredCapabilities"]) is not None
    ]
    if not capable:
        problems.append("no Agent of the Organization has the required capabilities")
    free = _free_budget(view, mission)
    for dim, amount in limits_of(contract["budget"]).items():
        if dim in free and amount > free[dim]:
            problems.append(f"its {dim} budget {amount:g} exceeds what is left ({free[dim]:g})")
    if parse_timestamp(contract["deadline"]) > parse_timestamp(mission.deadline):
        problems.append("its deadline is after the Mission's")
    required_by = constraints_of(contract).get(REQUIRED_BY, [])
    new_id = proposal_item_id(short(mission.mission_id), proposal["proposalId"])

    def depends_on(node: str) -> tuple[str, ...]:
        if node == new_id:
            return tuple(deps)
        item = items.get(node)
        return item.dependencies if item is not None else ()

    for target in required_by:
        item = items.get(target)
        if item is None or item.state not in _INSERTABLE:
            problems.append(f"{target} cannot take a new dependency now")
        elif closes_cycle(depends_on, target, [new_id]):
            problems.append(
                f"making {short(target)} depend on it would close a dependency cycle (§10.4)"
            )
    return problems


def proposal_intents(
    view: View,
    spec: MissionSpec,
    mission: MissionRecord,
    items: Mapping[str, WorkItemRecord],
    book: PlanBook,
) -> Iterator[Intent]:
    """Authorize acceptable Worker proposals, decline the others, insert their dependencies."""
    for new_id, targets in sorted(book.inserts.items()):
        if new_id not in items:
            continue
        for target in targets:
            item = items.get(target)
            if item is None or new_id in item.dependencies or item.state not in _INSERTABLE:
                continue
            yield Intent(
                kind="ext.missionweaveprotocol.core.work_dependency_add",
                group=mission.group_id,
                why=f"the authorized proposal '{short(new_id)}' must come before "
                f"'{short(target)}': insert the dependency (no cycle, §10.4)",
                payload={"workItemId": target, "dependsOn": [new_id]},
                overrides={"expected_revision": item.revision},
                tag=f"insert:{new_id}",
            )
    for proposal in sorted(view.state.proposals.values(), key=lambda p: p["proposalId"]):
        pid = proposal["proposalId"]
        if proposal.get("missionId") != mission.mission_id or proposal.get("status") != "open":
            continue
        if pid in book.proposals:
            continue
        problems = judge_proposal(view, proposal, mission, items)
        if problems:
            yield Intent(
                kind="message.post",
                group=mission.group_id,
                why=f"the Coordinator declines proposal {short(pid)}: {problems[0]}",
                payload={
                    "content": [
                        {"type": "text", "text": f"Proposal declined: {'; '.join(problems)}."},
                        {
                            "type": "data_ref",
                            "schema": PROPOSAL_DECISION_SCHEMA,
                            "data": {
                                "proposalId": pid,
                                "decision": "declined",
                                "reasons": problems,
                            },
                        },
                    ],
                    "references": [pid],
                },
                tag=f"proposal:{pid}",
            )
            continue
        contract = proposal["contract"]
        payload: dict[str, Any] = {
            "workItemId": proposal_item_id(spec.id, pid),
            "contract": contract,
            "proposalId": pid,
        }
        if proposal.get("parentWorkItemId"):
            payload["parentWorkItemId"] = proposal["parentWorkItemId"]
        yield Intent(
            kind="work.authorize",
            group=mission.group_id,
            why=f"a Worker discovered more work ({proposal['summary']}): the Coordinator "
            "authorizes its proposal into the graph",
            payload=payload,
            tag=f"proposal:{pid}",
        )


def note_proposal_outcome(intent: Intent, ok: bool, book: PlanBook) -> None:
    """Remember a proposal decision once the log has it."""
    if not ok or not intent.tag.startswith("proposal:"):
        return
    pid = intent.tag.split(":", 1)[1]
    if intent.kind == "work.authorize":
        book.proposals[pid] = "authorized"
        targets = constraints_of(intent.payload["contract"]).get(REQUIRED_BY, [])
        if targets:
            book.inserts[intent.payload["workItemId"]] = list(targets)
    else:
        book.proposals[pid] = "declined"


# --------------------------------------------------------------------------- child Missions


def create_child(
    spec: MissionSpec, work: WorkSpec, item: WorkItemRecord, start_us: int
) -> Intent | None:
    """Promote ``item`` to its child Mission (§14): the Parent Coordinator becomes its owner."""
    child = work.child
    if child is None or item.child_mission_id is not None or item.state is not W.OPEN:
        return None
    deadline = min(
        start_us + child.deadline_s * 1_000_000,
        epoch_us(item.contract["deadline"]),
    )
    return Intent(
        kind="mission.create_child",
        group=item.group_id,
        why=f"'{work.id}' is complex enough for its own Mission: promote it to child Mission "
        f"'{child.id}' with its own Coordinator ({child.coordinator}) and WorkItems (§14)",
        payload={
            "parentWorkItemId": item.work_item_id,
            "missionId": mission_id(child.id),
            "childGroupId": group_id(child.id),
            "coordinatorAgentId": agent_id(child.coordinator),
            "objective": child.objective,
            "definitionOfDone": [
                {
                    "criterionId": "child-approved",
                    "description": "Every planned WorkItem of the child is verified and the "
                    "Parent Coordinator, as child MissionOwner, approves",
                    "evidenceRequired": ["human_review"],
                }
            ],
            "budget": budget_document(child.budget),
            "deadline": format_utc(deadline),
            "childFailurePolicy": child.child_failure_policy,
        },
    )


def approve_children(view: View, now_us: int, book: PlanBook) -> Iterator[Intent]:
    """As child MissionOwner, approve each child Mission awaiting approval, having read every
    review its Coordinator retained (the child's result becomes the parent WorkItem's)."""
    for child in sorted(view.state.missions.values(), key=lambda m: m.mission_id):
        if child.owner_id != view.me or child.state is not MissionState.AWAITING_APPROVAL:
            continue
        reviews = reviews_for_approval(
            book.child_events.get(child.mission_id, []), child.mission_id
        )
        verified = [
            i.work_item_id
            for i in view.state.work_items.values()
            if i.mission_id == child.mission_id and i.state is W.VERIFIED
        ]
        book.child_reviews[child.mission_id] = reviews
        approval = view.sign(
            "approval",
            {
                "approvalId": f"urn:mwp-local:approval:{short(child.mission_id)}:"
                f"r{child.submitted_revision}",
                "kind": "child_mission",
                "decision": "approved",
                "missionId": child.mission_id,
                "groupId": child.group_id,
                "missionRevision": child.submitted_revision,
                "artifactHashes": sorted(child.submitted_artifacts),
                "acceptancePolicyVersion": "1.0.0",
                "approver": view.member.actor,
                "comments": f"Parent Coordinator as child MissionOwner: read {len(reviews)} "
                f"retained reviews for {len(verified)} verified WorkItems.",
                "conditions": [],
                "occurredAt": format_utc(now_us),
            },
        )
        yield Intent(
            kind="mission.approve",
            group=child.group_id,
            why=f"as child MissionOwner, approve child Mission '{short(child.mission_id)}': "
            "its approval verifies the parent WorkItem (§14)",
            payload={"approval": approval},
            overrides={"expected_revision": child.revision},
        )


# --------------------------------------------------------------------------- submission


def submission(
    spec: MissionSpec,
    works: list[WorkSpec],
    items: Mapping[str, WorkItemRecord],
    planned_ids: frozenset[str] | None = None,
) -> Intent | None:
    """``mission.submit_for_approval`` once every planned WorkItem (and everything authorized
    since) is verified, with the exact Artifact set of the deliverables (``planned_ids``: the
    IDs of ``works``, when the caller knows them)."""
    if any(i.state not in (W.VERIFIED, W.CANCELLED) for i in items.values()):
        return None  # (checked first: the cheapest way to find that it is too early)
    ids = planned_ids if planned_ids is not None else {work_item_id(spec.id, w.id) for w in works}
    if not ids or not ids <= items.keys():
        return None
    if any(items[w].state is not W.VERIFIED for w in ids):
        return None
    artifacts = sorted(
        {
            h
            for i in items.values()
            if i.state is W.VERIFIED and review_of(i.contract) is None
            for h in i.submitted_artifacts
        }
    )
    if not artifacts:
        return None
    return Intent(
        kind="mission.submit_for_approval",
        group=group_id(spec.id),
        why="every planned WorkItem is verified and reviewed: submit the exact revision and "
        f"its {len(artifacts)} Artifacts for human Approval",
        payload={"artifactHashes": artifacts},
    )
