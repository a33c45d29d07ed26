"""Writes the concept notebooks 02–08 (kept as code so their source is reviewable).

Each notebook shows requirements of MWP 0.1 at work: every ``Bench.accept``/``Bench.refuse``/
``show`` call (``mwp_local.notebook.bench``) names the MWP-WRK ID it demonstrates, accepted or
rejected, and the text around it says why. Run ``python make_notebooks.py`` after editing; the
test suite executes them.
"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

import nbwrite

from mwp_local.store.views import ANALYSES

#: The chart of ``mwp_local.notebook.charts`` that draws each analysis notebook 08 shows.
CHART = {
    "time_per_state": "state_durations",
    "concurrent_executions": "worker_load",
    "declines_by_reason": "declines_by_reason",
}

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
HERE = Path(__file__).parent

SETUP = code(
    "%load_ext mwp_local.notebook\n"
    "from IPython.display import HTML, SVG, display\n"
    "from mwp_local.notebook import bench\n"
    "from mwp_local.notebook.bench import Bench, show, coverage\n"
    "b = Bench()\n"
    "b.create_mission()\n"
    "WID = 'urn:mwp-local:work:impl'"
)
COVERAGE = [
    md("## What this notebook showed\n\nEvery requirement above, and whether it was shown "
       "accepted, rejected, or both."),
    code("coverage()"),
]  # fmt: skip


def notebook(name: str, cells: list[object]) -> None:
    nbwrite.write(HERE / name, cells, Path(name).stem[:2])


# ---------------------------------------------------------------------- 02
notebook("02_work_contracts_and_state_machine.ipynb", [
    md("# Work Contracts and the WorkItem state machine\n\n"
       "A **WorkItem** exists only once the Coordinator authorizes it with a complete, "
       "machine-readable **Work Contract** (§10.1). It then moves through the states of §10.2, "
       "and only through the table's rows. Here you drive a Group log by hand with a small "
       "*bench* (`mwp_local.notebook.bench`, a `Workbench` of `mwp_local.client`): you send each Command as any Principal and watch the Group "
       "Authority answer.\n\nRequirements shown: **MWP-WRK-001**, **MWP-WRK-002**, "
       "**MWP-WRK-003**, **MWP-WRK-007**."),
    SETUP,
    md("## MWP-WRK-001: a Work Contract must be complete\n\nA contract without acceptance "
       "criteria is refused with `WORK_CONTRACT_INCOMPLETE`, and the explanation names the "
       "missing member. Nothing is appended."),
    code("incomplete = b.contract()\n"
         "del incomplete['acceptanceCriteria']\n"
         "b.refuse('MWP-WRK-001', 'WORK_CONTRACT_INCOMPLETE', 'coordinator', 'work.authorize',\n"
         "         {'workItemId': WID, 'contract': incomplete})"),
    md("The complete contract (goal, deliverables, criteria and Evidence, inputs, allowed "
       "resources, capabilities, deadline, urgency, impact, six-dimensional budget, retry policy, "
       "risk and approval) is accepted: the WorkItem is `open`."),
    code("b.accept('MWP-WRK-001', 'coordinator', 'work.authorize',\n"
         "         {'workItemId': WID, 'contract': b.contract()})"),
    md("## MWP-WRK-003: only the table's transitions\n\nThe state machine below is drawn from "
       "`WORK_ITEM_TABLE`, the same table the Authority looks transitions up in. From `open`, "
       "`work.accept_result` is not a row (nothing was submitted): refused with "
       "`INVALID_STATE_TRANSITION`."),
    code("from mwp_local.render.svg import state_machine_svg, allowed_transitions_html\n"
         "display(HTML(state_machine_svg('open') + allowed_transitions_html('open')))"),
    md("Each edge is a row of the table: the Command (or the cause) that drives it, the Event "
       "kinds that record it, and the guards the Authority runs, in order. The Mission has its "
       "own table (§7.1), drawn the same way; an `approved` Mission is never reopened."),
    code("from mwp_local.render.svg import mission_machine_svg\n"
         "from mwp_local.protocol.tables import MISSION_TABLE\n"
         "display(HTML(mission_machine_svg('active')\n"
         "             + allowed_transitions_html('active', MISSION_TABLE)))"),
    code("b.refuse('MWP-WRK-003', 'INVALID_STATE_TRANSITION', 'coordinator', 'work.accept_result',\n"
         "         {'workItemId': WID})"),
    code("b.accept('MWP-WRK-003', 'coordinator', 'work.offer', b.offer_payload(WID))"),
    md("## MWP-WRK-002: a revised contract needs renewed acceptance\n\nThe Worker found an "
       "ambiguity before accepting. The Coordinator answers with a new `work.offer` carrying "
       "the corrected contract (version 2): the old offer is withdrawn and the WorkItem's "
       "revision moves on."),
    code("old_revision = b.state.work_items[WID].revision\n"
         "revised = b.contract(contractVersion=2, goal='Implement the feature, with a clearer scope')\n"
         "b.accept('MWP-WRK-002', 'coordinator', 'work.offer', {**b.offer_payload(WID), 'contract': revised})"),
    md("An acceptance written against the old revision (the contract the Worker read before) "
       "is refused with `REVISION_CONFLICT`: the Worker must read and accept the new contract."),
    code("b.refuse('MWP-WRK-002', 'REVISION_CONFLICT', 'worker-a', 'work.accept_offer',\n"
         "         {'workItemId': WID}, expected_revision=old_revision)"),
    code("b.accept('MWP-WRK-002', 'worker-a', 'work.accept_offer', {'workItemId': WID},\n"
         "         expected_revision=b.state.work_items[WID].revision)"),
    md("The same stale-revision check guards every transition (MWP-WRK-003): a Command against "
       "an old aggregate revision is refused."),
    code("b.refuse('MWP-WRK-003', 'REVISION_CONFLICT', 'coordinator', 'work.cancel',\n"
         "         {'workItemId': WID}, expected_revision=1)"),
    md("## MWP-WRK-007: an evolving DAG, without cycles\n\nWork discovered while the Mission "
       "runs is added as new WorkItems and dependencies; a dependency that would close a cycle "
       "is refused."),
    code("A, B = 'urn:mwp-local:work:a', 'urn:mwp-local:work:b'\n"
         "b.authorize(A)\n"
         "b.authorize(B)\n"
         "b.accept('MWP-WRK-007', 'coordinator', 'ext.missionweaveprotocol.core.work_dependency_add',\n"
         "         {'workItemId': B, 'dependsOn': [A]})"),
    code("b.refuse('MWP-WRK-007', 'INVALID_COMMAND', 'coordinator',\n"
         "         'ext.missionweaveprotocol.core.work_dependency_add', {'workItemId': A, 'dependsOn': [B]})"),
    md("An item is eligible only once its dependencies are satisfied: `B` accepted by a Worker "
       "still cannot start while `A` is open."),
    code("b.offer(B)\nb.take(B)\n"
         "b.refuse('MWP-WRK-007', 'INVALID_STATE_TRANSITION', 'worker-a', 'work.start',\n"
         "         {'workItemId': B, 'ownershipEpoch': 1})"),
    md("The Mission's WorkItem DAG, coloured by state:"),
    code("from mwp_local.notebook.graphs import MissionGraph\nMissionGraph(b)"),
    md("## MWP-WRK-003: the table before the fences (§10.2)\n\n`WID` is owned but still "
       "`queued`: no Execution Lease yet. A submission from `queued` is not a row of the table, "
       "so it is `INVALID_STATE_TRANSITION`, whatever the lease fence would have said."),
    code("print(b.state.work_items[WID].state)\n"
         "early = b.artifact(WID, content=b'early')\n"
         "b.refuse('MWP-WRK-003', 'INVALID_STATE_TRANSITION', 'worker-a', 'work.submit',\n"
         "         {**b.lease(WID), 'artifactHashes': [early['contentHash']],\n"
         "          'evidence': [b.evidence(WID, early['contentHash'])]})"),
    md("## MWP-WRK-002: a material revision of an owned item (§10.1)\n\nInserting a "
       "dependency changes the item's inputs and when it can start, so it is material: the "
       "revision requires renewed acceptance and the old acceptance no longer counts. The old "
       "owner's start under its epoch is `WORK_LEASE_EXPIRED`."),
    code("C = 'urn:mwp-local:work:c'\nb.authorize(C)\n"
         "epoch = b.state.work_items[WID].ownership_epoch\n"
         "b.accept('MWP-WRK-002', 'coordinator', 'ext.missionweaveprotocol.core.work_dependency_add',\n"
         "         {'workItemId': WID, 'dependsOn': [C]})"),
    code("b.refuse('MWP-WRK-002', 'WORK_LEASE_EXPIRED', 'worker-a', 'work.start',\n"
         "         {'workItemId': WID, 'ownershipEpoch': epoch})"),
    md("## Another protocol version (§21)\n\nA Command stating `protocolVersion` `0.2` is "
       "`UNSUPPORTED_VERSION`, not a schema failure: the explanation names the version this "
       "Authority speaks."),
    code("hi = {'content': [{'type': 'text', 'text': 'hi'}]}\n"
         "b.refuse('§21', 'UNSUPPORTED_VERSION', 'mission-owner', 'message.post', hi,\n"
         "         extra={'protocolVersion': '0.2'})"),
    code("b.accept('§21', 'mission-owner', 'message.post', hi)"),
    md("## The Group's own table: archival (§7.4, §15.2)\n\nA Group has a state machine too "
       "(`mwp_local/protocol/tables/group.py`). `ext.missionweaveprotocol.core.group_archive` "
       "closes it: only an archival service of the Organization may send it (an Agent gets "
       "`AUTH_FORBIDDEN`), only once the Mission has ended (else `INVALID_STATE_TRANSITION`), "
       "and with a signed, final Group Snapshot linked to the history it closes: every Event ID "
       "in order, the hash of the final state, the policy log."),
    code("import json\n"
         "\n"
         "from mwp_local.authority.archive import unsigned_snapshot\n"
         "\n"
         "ARCHIVE = 'ext.missionweaveprotocol.core.group_archive'\n"
         "\n"
         "\n"
         "def final_snapshot():\n"
         "    plane = b.org.control_plane\n"
         "    ids = [e['eventId'] for e in (json.loads(r.document) for r in b.log.store.events())\n"
         "           if e.get('groupId') == bench.GROUP]\n"
         "    doc = unsigned_snapshot(b.state, bench.GROUP, ids, organization_id=b.org.organization_id,\n"
         "                            created_by=plane.actor, created_at=b.now().text)\n"
         "    return b.org.sign('group-snapshot', plane, doc)\n"
         "\n"
         "\n"
         "b.refuse('§7.4', 'AUTH_FORBIDDEN', 'coordinator', ARCHIVE, {'snapshot': final_snapshot()})"),
    code("b.refuse('§7.4', 'INVALID_STATE_TRANSITION', 'control-plane', ARCHIVE,\n"
         "         {'snapshot': final_snapshot()})"),
    md("Once the MissionOwner ends the Mission, the archival service archives the Group, and "
       "an archived Group accepts no Command at all: `archived` is terminal."),
    code("b.ok('mission-owner', 'mission.cancel', {'reason': 'the bench is done'})\n"
         "b.accept('§7.4', 'control-plane', ARCHIVE, {'snapshot': final_snapshot()})"),
    code("print(b.state.groups[bench.GROUP].state)\n"
         "b.refuse('§7.4', 'INVALID_STATE_TRANSITION', 'mission-owner', 'mission.cancel',\n"
         "         {'reason': 'once more'})"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 03
notebook("03_offers_ownership_and_leases.ipynb", [
    md("# Offers, ownership and leases\n\nAn **offer** reserves nothing; the first valid "
       "acceptance wins a new **Ownership Epoch**. Starting needs an **Execution Lease** whose "
       "Lease ID every later Command cites (§10.3, §11.3).\n\nRequirements shown: "
       "**MWP-WRK-004**, **MWP-WRK-005**, **MWP-WRK-006**, **MWP-WRK-013**, **MWP-WRK-014**, **MWP-WRK-016**."),
    SETUP,
    md("## MWP-WRK-006: every offer records a structured selection basis\n\nCapability match, "
       "authorization eligibility, availability, expected cost, reliability Evidence, policy "
       "rules. An offer without one is refused."),
    code("b.authorize(WID)\n"
         "no_basis = b.offer_payload(WID)\n"
         "del no_basis['selectionBasis']\n"
         "b.refuse('MWP-WRK-006', 'INVALID_COMMAND', 'coordinator', 'work.offer', no_basis)"),
    md("The basis is what was stated, not how the Coordinator thought (§10.3): an empty basis "
       "names every missing member, and one carrying `chainOfThought` (private reasoning) is "
       "refused too: both `SCHEMA_VALIDATION_FAILED`."),
    code("empty = {**b.offer_payload(WID), 'selectionBasis': {}}\n"
         "b.refuse('MWP-WRK-006', 'SCHEMA_VALIDATION_FAILED', 'coordinator', 'work.offer', empty)"),
    code("musing = {**b.offer_payload(WID), 'selectionBasis': {\n"
         "    **b.basis(), 'chainOfThought': 'worker-a seemed keen, and b was slow once'}}\n"
         "b.refuse('MWP-WRK-006', 'SCHEMA_VALIDATION_FAILED', 'coordinator', 'work.offer', musing)"),
    md("An offer to an Agent not yet in the Group grants it a provisional Membership, which "
       "names the signed Context Package the new member receives (§8, MWP-WRK-027): the bench "
       "sends one as a well-behaved Coordinator does; without it the offer is refused. The "
       "accepted offer below carries it."),
    code("bare = {**b.offer_payload(WID), 'contextPackage': None}\n"
         "b.refuse('MWP-WRK-027', 'INVALID_COMMAND', 'coordinator', 'work.offer', bare)"),
    code("b.accept('MWP-WRK-006', 'coordinator', 'work.offer', b.offer_payload(WID, seconds=10))"),
    md("## MWP-WRK-004: offers expire without an Event; urgent races have one winner\n\nThe "
       "offer above expires in 10 s. Its expiry appends nothing, and a late acceptance is "
       "refused with `WORK_OFFER_EXPIRED`."),
    code("count = b.log.store.event_count()\n"
         "b.advance(11)\n"
         "assert b.log.store.event_count() == count  # expiry appended nothing\n"
         "b.refuse('MWP-WRK-004', 'WORK_OFFER_EXPIRED', 'worker-a', 'work.accept_offer',\n"
         "         {'workItemId': WID}, expected_revision=b.state.work_items[WID].revision)"),
    md("Urgent work may go to a bounded set of candidates at once. The first valid acceptance "
       "wins; the loser is refused with `WORK_ALREADY_OWNED` and its offer is withdrawn."),
    code("URGENT = 'urn:mwp-local:work:hotfix'\n"
         "b.authorize(URGENT, requestedUrgency='critical')\n"
         "b.ok('coordinator', 'work.offer', {'workItemId': URGENT, 'selectionBasis': b.basis(),\n"
         "     'offers': [{'agentId': b.org.get(a).id, 'expiresAt': b.at(60)} for a in ('worker-a', 'worker-b')]})\n"
         "revision = b.state.work_items[URGENT].revision\n"
         "b.accept('MWP-WRK-004', 'worker-b', 'work.accept_offer', {'workItemId': URGENT}, expected_revision=revision)"),
    code("b.refuse('MWP-WRK-004', 'WORK_ALREADY_OWNED', 'worker-a', 'work.accept_offer',\n"
         "         {'workItemId': URGENT}, expected_revision=revision)"),
    code("b.sql('SELECT agent_id, status FROM offers WHERE work_item_id = $w ORDER BY agent_id', {'w': URGENT})"),
    md("## MWP-WRK-013: fenced, renewable Execution Leases\n\n`worker-b` starts the hotfix under "
       "an Execution Lease, checkpoints (which releases the lease) and starts again under a "
       "**new** Lease ID with the **same** Ownership Epoch. A delayed renewal that cites the old "
       "Lease ID is refused with `WORK_LEASE_EXPIRED`; the current one is accepted."),
    code("b.start(URGENT, 'worker-b')\n"
         "first = b.lease(URGENT)\n"
         "b.ok('worker-b', 'work.checkpoint', {**first, 'checkpoint': {'progress': b.progress()}})\n"
         "b.start(URGENT, 'worker-b')\n"
         "second = b.lease(URGENT)\n"
         "assert first['ownershipEpoch'] == second['ownershipEpoch'] and first['leaseId'] != second['leaseId']\n"
         "b.refuse('MWP-WRK-013', 'WORK_LEASE_EXPIRED', 'worker-b',\n"
         "         'ext.missionweaveprotocol.core.work_execution_lease_renew', first)"),
    code("b.accept('MWP-WRK-013', 'worker-b', 'ext.missionweaveprotocol.core.work_execution_lease_renew', second)"),
    md("The renewal's kind is the reference implementation's name, "
       "`ext.missionweaveprotocol.core.work_execution_lease_renew` (§15.2), so a reference "
       "Worker talks to this Authority unchanged. The name this sandbox used before, "
       "`…execution_lease_renew`, is no kind of the core: it is refused with `INVALID_COMMAND`, "
       "and the explanation names the kind to use. Kinds the sandbox invents (`lease_expired`, "
       "`knowledge_*`) live in its own namespace, `ext.mwp-local.sandbox.*`, declared by its "
       "Extension Profile (§18)."),
    code("b.refuse('MWP-WRK-013', 'INVALID_COMMAND', 'worker-b',\n"
         "         'ext.missionweaveprotocol.core.execution_lease_renew', second)"),
    md("## MWP-WRK-016: progress is structured, percentages carry no authority\n\nA renewal "
       "may carry a progress report with exactly six members: current phase, completed "
       "milestones, next checkpoint, blockers, revised estimate, Evidence references. A report "
       "that adds a percentage is refused."),
    code("b.refuse('MWP-WRK-016', 'INVALID_COMMAND', 'worker-b',\n"
         "         'ext.missionweaveprotocol.core.work_execution_lease_renew',\n"
         "         {**second, 'progress': {**b.progress(), 'percentComplete': 75}})"),
    code("b.accept('MWP-WRK-016', 'worker-b', 'ext.missionweaveprotocol.core.work_execution_lease_renew',\n"
         "         {**second, 'progress': b.progress()})"),
    md("## MWP-WRK-014: a replacement Session revokes the old runtime's leases\n\nThe control "
       "plane opens a new Session for `worker-b` (its process restarted). Its active lease is "
       "revoked and the WorkItem returns to `queued`; a Command still signed under the old "
       "Session Epoch is refused with `AUTH_STALE_SESSION`."),
    code("old_epoch = b.state.agents[b.org.get('worker-b').id].session_epoch\n"
         "b.accept('MWP-WRK-014', 'control-plane', 'ext.missionweaveprotocol.identity.session_open',\n"
         "         {'agentId': b.org.get('worker-b').id}, group=None)"),
    code("print(b.state.work_items[URGENT].state)\n"
         "b.refuse('MWP-WRK-014', 'AUTH_STALE_SESSION', 'worker-b',\n"
         "         'ext.missionweaveprotocol.core.work_execution_lease_renew', second, session_epoch=old_epoch)"),
    md("Every lease, in SQL:"),
    code("b.sql(\"SELECT lease_type, holder_agent_id, state, closure_reason FROM leases \"\n"
         "      \"WHERE work_item_id = $w ORDER BY issued_at\", {'w': URGENT})"),
    md("## MWP-WRK-005: admission control before accepting\n\nAcceptance is a durable "
       "commitment, so a Worker first checks queue capacity, concurrency, capabilities, "
       "deadline, authorization eligibility, dependencies and budget (`mwp_local/agents/worker/"
       "admission.py`, pure code). A Worker cleared for risky work can accept this offer; one "
       "cleared only for reversible work declines with the structured reason `authorization` "
       "(posted in the WorkItem Conversation instead of an acceptance)."),
    code("from mwp_local.agents.worker.admission import AdmissionInputs, CostModel, Eligibility, admit\n"
         "RISKY = 'urn:mwp-local:work:migration'\n"
         "b.authorize(RISKY, sideEffectRisk='external')\n"
         "b.offer(RISKY, 'worker-a')\n"
         "def admission(eligibility):\n"
         "    return admit(AdmissionInputs(\n"
         "        item=b.state.work_items[RISKY], state=b.state, agent_id=b.org.get('worker-a').id,\n"
         "        now_us=b.now_us, capabilities={bench.CAP[0]: bench.CAP[1]},\n"
         "        unavailable_capabilities=frozenset(), max_concurrency=2, queue_capacity=4,\n"
         "        eligibility=eligibility, cost=CostModel(), estimate_us=lambda item: 600_000_000))\n"
         "cleared = admission(Eligibility(max_risk='external'))\n"
         "assert cleared.accepted\n"
         "show('MWP-WRK-005', 'accepted', 'cleared for external side effects: the Worker can commit credibly')"),
    code("declined = admission(Eligibility(max_risk='reversible'))\n"
         "assert str(declined.reason) == 'authorization'\n"
         "show('MWP-WRK-005', 'rejected', f'declined with reason {declined.reason}: {declined.details}')"),
    md("## Travel back\n\nThe slider rebuilds every WorkItem's state, owner, epoch and lease "
       "at any point of the Group's sequence by replaying the log."),
    code("from mwp_local.notebook.widgets import TimeTravel\nTimeTravel(b, bench.GROUP)"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 04
notebook("04_scheduling_fairness_and_preemption.ipynb", [
    md("# Scheduling, fairness and preemption\n\nEach Worker owns a **Scheduler** that picks "
       "eligible WorkItems from its per-Group queues into isolated execution slots (§11.1). "
       "Here the flagship mission file runs: two Missions (two Groups) share the Worker "
       "`dev-shared`.\n\nRequirements shown: **MWP-WRK-009**, **MWP-WRK-010**, **MWP-WRK-011**, "
       "**MWP-WRK-012**, **MWP-WRK-015**."),
    code("%load_ext mwp_local.notebook\n"
         "import tempfile\nfrom pathlib import Path\n"
         "from IPython.display import HTML, display\n"
         "from mwp_local.notebook.bench import show, coverage\n"
         "from mwp_local.drivers.sandbox import Sandbox\n"
         "from mwp_local.render.timeline import timeline_html, scheduler_panel_html, find_scheduler\n"
         "ROOT = Path.cwd().parent\n"
         "sb = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', ROOT / 'sample_missions' / 'flagship.toml', seed=1)\n"
         "sb.run(max_steps=119)\n"
         "sb.summary()"),
    md("## The Scheduler panel\n\nA frozen snapshot of `dev-shared`'s Scheduler, 119 steps in: "
       "per-Group queues in service order, quotas, weights and the service each Group got. "
       "A Coordinator can ask for urgency, but the Worker's Scheduler has the final word on "
       "cross-Group order (MWP-WRK-009); weighted fairness with aging bounds how long a Group "
       "can wait (MWP-WRK-010)."),
    code("HTML(scheduler_panel_html(find_scheduler(sb.runtime('dev-shared').policy).snapshot(), 'dev-shared'))"),
    md("## The Timeline\n\nEvery Worker's execution slots over time, from the log alone: one "
       "bar per Execution Lease, marks for checkpoints, preemptions, blocks and failures."),
    code("summary = sb.run()\nHTML(timeline_html(sb.log.store))"),
    md("## The Scheduler up close\n\nThe Scheduler is pure code (`mwp_local/agents/scheduler/"
       "core.py`): give it queued work and slots, it returns decisions. Two Groups, one "
       "free slot per tick, every item one second long."),
    code("from mwp_local.agents.scheduler.core import (Dispatch, PreemptionPolicy, QueuedWork, RequestPreemption,\n"
         "    RequestedUrgency, Scheduler, SchedulerConfig, Slot)\n"
         "TICK = 1_000_000\n"
         "def work(wid, group, **fields):\n"
         "    return QueuedWork(work_item_id=wid, group_id=group, **{'enqueued_us': 0, 'estimated_duration_us': TICK, **fields})\n"
         "def serve(s, ticks):\n"
         "    order = []\n"
         "    for tick in range(ticks):\n"
         "        picked = [d.work_item_id for d in s.decide(tick * TICK, [Slot(slot_id='s0')]) if isinstance(d, Dispatch)]\n"
         "        for wid in picked:\n"
         "            s.completed(wid, service_us=TICK)\n"
         "        order += picked\n"
         "    return order"),
    md("### MWP-WRK-009: the Worker's Scheduler has the final word\n\nGroup `ga`'s Coordinator "
       "marks every item **critical**; `gb`'s are routine. Critical urgency orders work *within* "
       "`ga`, but cannot push `ga`'s Mission ahead of `gb`: the Scheduler alternates."),
    code("s = Scheduler(SchedulerConfig(preemption=PreemptionPolicy.NEVER))\n"
         "for i in range(6):\n"
         "    s.enqueue(work(f'a{i}', 'ga', urgency=RequestedUrgency.CRITICAL, enqueued_us=i))\n"
         "    s.enqueue(work(f'b{i}', 'gb', urgency=RequestedUrgency.ROUTINE, enqueued_us=i))\n"
         "display(HTML(scheduler_panel_html(s.snapshot(0), 'before')))\n"
         "order = serve(s, 12)\n"
         "assert [w[0] for w in order] == ['a', 'b'] * 6\n"
         "show('MWP-WRK-009', 'accepted', 'the Worker filled its free slot from its per-Group queues every tick: ' + ' '.join(order))"),
    code("show('MWP-WRK-009', 'rejected', \"ga's Coordinator asked for critical urgency on every item; \"\n"
         "     \"the Scheduler did not let it force its Mission ahead of gb (a, b, a, b, ...)\")"),
    md("### MWP-WRK-010: weighted fairness and anti-starvation\n\nWeights 3:1 give `ga` three "
       "dispatches for each of `gb`'s while both are backlogged."),
    code("s = Scheduler(SchedulerConfig(preemption=PreemptionPolicy.NEVER, weights={'ga': 3.0, 'gb': 1.0}))\n"
         "for i in range(20):\n"
         "    s.enqueue(work(f'a{i}', 'ga', enqueued_us=i))\n"
         "    s.enqueue(work(f'b{i}', 'gb', enqueued_us=i))\n"
         "order = [w[0] for w in serve(s, 16)]\n"
         "assert order.count('a') == 12 and order.count('b') == 4\n"
         "show('MWP-WRK-010', 'accepted', 'weights 3:1 gave ' + ''.join(order))"),
    md("Pure highest-priority-first is non-conforming. `ga` floods 50 critical, top-class, "
       "already-due items; `gb` has one routine item. The flood is refused the whole slot: "
       "`gb` is served within the starvation bound (here 6 dispatches)."),
    code("s = Scheduler(SchedulerConfig(min_charge_us=TICK, max_charge_us=TICK, max_lead_us=2 * TICK))\n"
         "for i in range(50):\n"
         "    s.enqueue(work(f'a{i}', 'ga', urgency=RequestedUrgency.CRITICAL, priority_class=3, deadline_us=0))\n"
         "s.enqueue(work('b0', 'gb', urgency=RequestedUrgency.ROUTINE))\n"
         "order = serve(s, 10)\n"
         "waited = order.index('b0')\n"
         "assert waited <= 6\n"
         "show('MWP-WRK-010', 'rejected', f'a flood of critical work could not starve gb: b0 ran after {waited} dispatches')"),
    md("### MWP-WRK-015: reordering at once, preemption only at a safe point\n\nRaising an "
       "item's urgency reorders its queue immediately."),
    code("s = Scheduler(SchedulerConfig(preemption=PreemptionPolicy.NEVER))\n"
         "for i in range(3):\n"
         "    s.enqueue(work(f'a{i}', 'ga', enqueued_us=i, urgency=RequestedUrgency.ROUTINE))\n"
         "s.reprioritize('a2', urgency=RequestedUrgency.CRITICAL)\n"
         "queue = [e.work_item_id for e in s.snapshot(10).group('ga').queue]\n"
         "assert queue == ['a2', 'a0', 'a1']\n"
         "show('MWP-WRK-015', 'accepted', f'a2 raised to critical: the queue is now {queue}')"),
    md("Running work is never interrupted at an unsafe point: while routine `a0` runs and "
       "critical `a1` waits, the Scheduler asks `a0` to yield only once its slot reports a safe "
       "point (then the Worker checkpoints, releases the slot, and `a0` re-enters its queue)."),
    code("s = Scheduler(SchedulerConfig())\n"
         "s.enqueue(work('a0', 'ga', urgency=RequestedUrgency.ROUTINE))\n"
         "s.decide(0, [Slot(slot_id='s0')])\n"
         "s.enqueue(work('a1', 'ga', urgency=RequestedUrgency.CRITICAL, enqueued_us=TICK))\n"
         "def running(safe):\n"
         "    return [Slot(slot_id='s0', work_item_id='a0', group_id='ga', started_us=0, at_safe_point=safe)]\n"
         "unsafe = [s.decide(t * TICK, running(False)) for t in range(2, 30)]\n"
         "assert all(d == [] for d in unsafe)\n"
         "show('MWP-WRK-015', 'rejected', 'for 28 ticks the slot was not at a safe point: no preemption was requested')"),
    code("decisions = s.decide(30 * TICK, running(True))\n"
         "assert isinstance(decisions[0], RequestPreemption)\n"
         "decisions"),
    md("### MWP-WRK-012: scheduling disclosure without leaks\n\nOn acceptance a Worker "
       "publishes an estimated start and completion, a confidence and its capacity status. "
       "Whether the other Groups queue one routine item or twenty critical ones under other "
       "names, the disclosure of `mine` is identical: nothing about them leaks."),
    code("NOW = 1_784_000_000 * TICK\n"
         "LONG = 600 * TICK\n"
         "def crowded(n, prefix, urgency):\n"
         "    # my Group runs two items and queues three; three other Groups run two and queue n each\n"
         "    s = Scheduler()\n"
         "    for w in (work(f'{prefix}-run-0', f'{prefix}-group-0', estimated_duration_us=LONG),\n"
         "              work(f'{prefix}-run-1', f'{prefix}-group-1', estimated_duration_us=LONG),\n"
         "              work('busy-0', 'my-group', estimated_duration_us=LONG),\n"
         "              work('busy-1', 'my-group', estimated_duration_us=LONG)):\n"
         "        s.enqueue(w)\n"
         "    slots = [Slot(slot_id=d.slot_id, work_item_id=d.work_item_id, group_id=s.work(d.work_item_id).group_id,\n"
         "                  started_us=NOW - 60 * TICK)\n"
         "             for d in s.decide(NOW - 60 * TICK, [Slot(slot_id=f's{i}') for i in range(4)])]\n"
         "    for k in range(3):\n"
         "        for i in range(n):\n"
         "            s.enqueue(work(f'{prefix}-wi-{k}-{i}', f'{prefix}-group-{k}', urgency=urgency,\n"
         "                           enqueued_us=NOW - i, estimated_duration_us=LONG))\n"
         "    for i in range(3):\n"
         "        s.enqueue(work(f'mine-{i}', 'my-group', enqueued_us=NOW - 10 + i, estimated_duration_us=LONG))\n"
         "    return s, slots\n"
         "small, small_slots = crowded(1, 'alpha', RequestedUrgency.ROUTINE)\n"
         "large, large_slots = crowded(20, 'omega', RequestedUrgency.CRITICAL)\n"
         "disclosed = small.disclose('mine-0', NOW, small_slots)\n"
         "assert disclosed == large.disclose('mine-0', NOW, large_slots) and 'alpha' not in str(disclosed)\n"
         "show('MWP-WRK-012', 'accepted', f'disclosed: {disclosed}')"),
    code("show('MWP-WRK-012', 'rejected', 'other Groups\\' names, items and global queue position: '\n"
         "     'not derivable (the same disclosure for 3 or 60 foreign items)')"),
    md("The Authority holds an acceptance to the same bound (§11.2): a `scheduleEstimate` "
       "carrying `globalQueuePosition` is refused by the schema, the same estimate without it "
       "is accepted."),
    code("from mwp_local.notebook import bench\n"
         "b = bench.Bench()\nb.create_mission()\nWID = 'urn:mwp-local:work:impl'\n"
         "b.authorize(WID)\nb.offer(WID)\n"
         "estimate = {'estimatedStart': b.at(60), 'estimatedCompletion': b.at(3600), 'confidence': 0.7,\n"
         "            'capacityStatus': 'queued', 'lastCalculatedAt': b.at(0)}\n"
         "rev = b.state.work_items[WID].revision\n"
         "b.refuse('MWP-WRK-012', 'SCHEMA_VALIDATION_FAILED', 'worker-a', 'work.accept_offer',\n"
         "         {'workItemId': WID, 'scheduleEstimate': {**estimate, 'globalQueuePosition': 3}},\n"
         "         expected_revision=rev)"),
    code("b.accept('MWP-WRK-012', 'worker-a', 'work.accept_offer',\n"
         "         {'workItemId': WID, 'scheduleEstimate': estimate}, expected_revision=rev)"),
    md("## MWP-WRK-011: never more execution than the Agent Card declares\n\nFrom the `leases` "
       "view: the most Execution Leases any Worker held at once, against its Agent Card's "
       "`maxConcurrency`."),
    code("peak = sb.sql('''\n"
         "WITH bounds AS (\n"
         "  SELECT holder_agent_id AS agent, CAST(issued_at AS TIMESTAMP) AS t, 1 AS d FROM leases WHERE lease_type = 'execution'\n"
         "  UNION ALL\n"
         "  SELECT holder_agent_id, CAST(coalesce(closed_at, expires_at) AS TIMESTAMP), -1 FROM leases WHERE lease_type = 'execution')\n"
         "SELECT b.agent, max(b.running) AS peak, a.max_concurrency FROM (\n"
         "  SELECT agent, sum(d) OVER (PARTITION BY agent ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS running FROM bounds) b\n"
         "JOIN agents a ON a.agent_id = b.agent GROUP BY b.agent, a.max_concurrency ORDER BY b.agent''')\n"
         "rows = peak.to_pylist()\n"
         "assert all(r['peak'] <= r['max_concurrency'] for r in rows)\n"
         "display(peak)\n"
         "show('MWP-WRK-011', 'accepted', 'every Worker stayed within its Agent Card maxConcurrency: '\n"
         "     + ', '.join(f\"{r['agent'].rsplit(':', 1)[-1]} {r['peak']}/{r['max_concurrency']}\" for r in rows))"),
    md("Each slot is isolated: its capability token is bound to its own WorkItem and Execution "
       "Lease. On a bench, `worker-a` runs two WorkItems in two slots; the external tool service "
       "refuses slot 1's token for slot 2's WorkItem."),
    code("from mwp_local.notebook import bench\n"
         "from mwp_local.agents.worker.slots import ExternalCall, attempt_key, execution_key\n"
         "from mwp_local.drivers.clock import timestamp\n"
         "from mwp_local.drivers.external import ExternalSystem, token_check_for\n"
         "b = bench.Bench()\n"
         "b.create_mission()\n"
         "ONE, TWO = 'urn:mwp-local:work:one', 'urn:mwp-local:work:two'\n"
         "REPO = [{'resource': 'urn:mwp-local:repo:app', 'operations': ['read', 'write']}]\n"
         "b.active(ONE, allowedResources=REPO)\n"
         "b.active(TWO, allowedResources=REPO)\n"
         "agent = b.org.get('worker-a').id\n"
         "def token_for(wid):\n"
         "    return b.log.capability_token(agent, b.state.work_items[wid].execution_lease_id, b.now(), ['write'])\n"
         "external = ExternalSystem(check=token_check_for(lambda t, op, us: b.log.check_token(t, op, timestamp(us))))\n"
         "def call(wid, token, slot):\n"
         "    item = b.state.work_items[wid]\n"
         "    key = attempt_key(execution_key(item.mission_id, wid, item.ownership_epoch), 'deliverable')\n"
         "    return ExternalCall(slot_id=slot, work_item_id=wid, resource='urn:mwp-local:repo:app', operation='write',\n"
         "                        operation_id='deliverable', idempotency_key=key, attempt=1, token=token)\n"
         "borrowed = external.perform(agent, call(TWO, token_for(ONE), 'slot-1'), b.now_us)\n"
         "assert borrowed.outcome == 'refused' and borrowed.code == 'AUTH_FORBIDDEN'\n"
         "show('MWP-WRK-011', 'rejected', f'slot 1\\'s token used for slot 2\\'s WorkItem: {borrowed.outcome} ({borrowed.code})')"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 05
notebook("05_failures_and_recovery.ipynb", [
    md("# Failures and recovery\n\nWork blocks, fails, retries, and owners disappear. The log "
       "keeps every step honest: a released or replaced lease can never be used again.\n\n"
       "Requirements shown: **MWP-WRK-017**, **MWP-WRK-018**, **MWP-WRK-019**, "
       "**MWP-WRK-014** (a Worker restart), **MWP-WRK-020**, **MWP-WRK-021**, **MWP-WRK-022** "
       "(bounded offline execution)."),
    SETUP,
    md("## MWP-WRK-017: blocking checkpoints and releases the slot\n\n`work.block` carries a "
       "checkpoint and the resolution it needs; its Execution Lease is released. A later "
       "checkpoint under that lease is refused: the WorkItem is `blocked`, and the state table "
       "is checked before any lease fence (§10.2), so the code is `INVALID_STATE_TRANSITION` "
       "and the explanation lists what the table allows from `blocked`."),
    code("b.active(WID)\n"
         "lease = b.lease(WID)\n"
         "b.accept('MWP-WRK-017', 'worker-a', 'work.block',\n"
         "         {**lease, 'requiredResolution': 'need access to the staging database',\n"
         "          'checkpoint': {'progress': b.progress()}})"),
    code("b.refuse('MWP-WRK-017', 'INVALID_STATE_TRANSITION', 'worker-a', 'work.checkpoint',\n"
         "         {**lease, 'checkpoint': {'progress': b.progress()}})\n"
         "print('lease', b.state.leases[lease['leaseId']].state)"),
    code("b.ok('coordinator', 'work.unblock', {'workItemId': WID, 'resolution': 'access granted'})\n"
         "print(b.state.work_items[WID].state)"),
    md("## MWP-WRK-018: failure needs Evidence\n\nA Worker-reported failure without Evidence is "
       "refused; with a signed failure report it is accepted (the retry policy of the contract "
       "bounds what happens next)."),
    code("b.start(WID)\n"
         "b.refuse('MWP-WRK-018', 'INVALID_COMMAND', 'worker-a', 'work.fail', {**b.lease(WID)})"),
    code("report = b.evidence(WID, 'sha256:' + '3' * 64, kind='failure_report')\n"
         "b.accept('MWP-WRK-018', 'worker-a', 'work.fail', {**b.lease(WID), 'evidence': [report], 'reason': 'tool crashed'})"),
    md("The contract's retry policy is the Authority's to hold (§11.4): with `maxAttempts` 1 "
       "a re-offer after the one failure is refused, naming the failures and the limit; an "
       "item with an attempt left may be offered again."),
    code("def failed_once(wid, attempts):\n"
         "    b.active(wid, retryPolicy={'maxAttempts': attempts, 'backoff': 'fixed', 'maxDelay': 'PT10M',\n"
         "                               'retryableFailures': ['TRANSIENT']})\n"
         "    report = b.evidence(wid, 'sha256:' + '1' * 64, kind='failure_report')\n"
         "    b.ok('worker-a', 'work.fail', {**b.lease(wid), 'evidence': [report]})\n"
         "ONCE, TWICE = 'urn:mwp-local:work:once', 'urn:mwp-local:work:twice'\n"
         "failed_once(ONCE, 1)\nfailed_once(TWICE, 2)\n"
         "b.refuse('MWP-WRK-018', 'INVALID_COMMAND', 'coordinator', 'work.offer', b.offer_payload(ONCE, 'worker-b'))"),
    code("b.accept('MWP-WRK-018', 'coordinator', 'work.offer', b.offer_payload(TWICE, 'worker-b'))"),
    md("## MWP-WRK-019: replacing a silent owner\n\nA second WorkItem: `worker-a` starts it and "
       "stops renewing. When its lease runs out (a `lease_expired` Event caused by a timer) the "
       "Coordinator re-offers it; `worker-b` wins it under Ownership Epoch 2 and starts it. The "
       "old owner's late checkpoint is refused with `WORK_STALE_OWNERSHIP`."),
    code("SECOND = 'urn:mwp-local:work:second'\n"
         "b.active(SECOND)\n"
         "old = b.lease(SECOND)\n"
         "b.advance(b.log.authority.config.execution_lease_us / 1e6 + 1)\n"
         "b.accept('MWP-WRK-019', 'coordinator', 'work.offer', b.offer_payload(SECOND, 'worker-b'))"),
    code("b.take(SECOND, 'worker-b')\n"
         "b.start(SECOND, 'worker-b')\n"
         "print('Ownership Epoch', b.state.work_items[SECOND].ownership_epoch)\n"
         "b.refuse('MWP-WRK-019', 'WORK_STALE_OWNERSHIP', 'worker-a', 'work.checkpoint',\n"
         "         {**old, 'checkpoint': {'progress': b.progress()}})"),
    md("## MWP-WRK-014: a Worker restarts\n\nIn a Sandbox, `restart_agent` drops a Worker's "
       "runtime as after a crash, rebuilds it from its local file (or from the Group log), and "
       "the control plane opens a new Session: the old runtime's leases are revoked and its "
       "active items go back to `queued`."),
    code("import tempfile\nfrom pathlib import Path\nfrom mwp_local.drivers.sandbox import Sandbox\n"
         "sb = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', Path.cwd().parent / 'sample_missions' / 'learn.toml', seed=1)\n"
         "sb.run(until=lambda s: any(str(i.state) == 'active' for i in s.log.state.work_items.values()))\n"
         "owner = next(i.owner['agentId'] for i in sb.log.state.work_items.values() if str(i.state) == 'active')\n"
         "restart = sb.restart_agent(owner.rsplit(':', 1)[-1], delete_local_file=True)\n"
         "assert restart.revoked_leases\n"
         "show('MWP-WRK-014', 'accepted', f'new Session Epoch {restart.session_epoch}; revoked {len(restart.revoked_leases)} lease(s); '\n"
         "     f'queues rebuilt from {restart.redelivered_events} re-delivered Events')"),
    code("sb.run()"),
    md("## Offline execution (MWP-WRK-020, MWP-WRK-021, MWP-WRK-022)\n\n"
       "The Group service goes down while `worker-a` is executing `offline` under its Execution "
       "Lease. For a bounded lease-grace period it may continue that already-active, reversible "
       "computation and **buffer** signed progress; it starts nothing new and takes no "
       "externally visible action without a valid lease. Each buffered Command carries the "
       "critical `bounded-offline-execution` binding (Agent, Group, WorkItem, original Session "
       "Epoch, Ownership Epoch, historical Lease ID, disconnect, buffer and grace times, "
       "historical lease expiry, six-dimensional usage delta). On reconnect the Worker rebases "
       "it (current `issuedAt`, Session and Membership Epochs, re-signed: the bench fills "
       "those in) and the Authority reconciles it."),
    code("from mwp_local.agents.worker.offline import extension\n"
         "from mwp_local.protocol.timestamps import format_utc, parse_timestamp\n"
         "OFF = 'urn:mwp-local:work:offline'\n"
         "b.active(OFF)\n"
         "item = b.state.work_items[OFF]\n"
         "lease = b.state.leases[item.execution_lease_id]\n"
         "started = parse_timestamp(lease.issued_at).epoch_micros\n"
         "def offline(**over):\n"
         "    binding = {'agentId': b.org.get('worker-a').id, 'groupId': bench.GROUP, 'workItemId': OFF,\n"
         "               'sessionEpoch': lease.session_epoch, 'ownershipEpoch': item.ownership_epoch,\n"
         "               'executionLeaseId': lease.lease_id, 'leaseExpiresAt': lease.expires_at,\n"
         "               'disconnectedAt': format_utc(started + 10_000_000),\n"
         "               'bufferedAt': format_utc(started + 60_000_000),\n"
         "               'graceDeadline': format_utc(lease.expires_us + 600_000_000),\n"
         "               'usageDelta': {'computeSeconds': 50, 'wallClockSeconds': 50}, **over}\n"
         "    return {'extra': {'extensions': extension(binding)}}\n"
         "progress = {'workItemId': OFF, 'ownershipEpoch': item.ownership_epoch, 'leaseId': lease.lease_id,\n"
         "            'checkpoint': {'progress': b.progress()}}\n"
         "# the service comes back two minutes after the historical lease ran out\n"
         "b.advance((lease.expires_us - b.now_us) / 1e6 + 120)\n"
         "print(b.state.leases[lease.lease_id].state)"),
    md("MWP-WRK-020: the lease ran out while the Worker was offline, so an externally visible "
       "action (publishing an Artifact) under it is refused; it must reconcile first."),
    code("b.refuse('MWP-WRK-020', 'WORK_LEASE_EXPIRED', 'worker-a', 'artifact.publish',\n"
         "         {'workItemId': OFF, 'ownershipEpoch': item.ownership_epoch, 'leaseId': lease.lease_id,\n"
         "          'artifact': b.artifact(OFF, content=b'made offline')})"),
    md("MWP-WRK-021: progress buffered after the grace deadline lies outside the historical "
       "lease/grace window: refused."),
    code("b.refuse('MWP-WRK-021', 'WORK_LEASE_EXPIRED', 'worker-a', 'work.checkpoint', progress,\n"
         "         **offline(bufferedAt=format_utc(lease.expires_us + 700_000_000)))"),
    md("MWP-WRK-022: the offline usage is charged in the same transaction as the progress. A "
       "delta that would overflow the WorkItem's budget refuses both: no charge, no checkpoint."),
    code("b.refuse('MWP-WRK-022', 'BUDGET_EXCEEDED', 'worker-a', 'work.checkpoint', progress,\n"
         "         **offline(usageDelta={'toolCalls': 100}))"),
    md("Inside the window, with a delta the budget can carry, the rebased checkpoint is accepted: "
       "first `resource_usage_recorded` (naming the historical and the reconciling Session), "
       "then `work.checkpointed`, in one transaction."),
    code("reconciled = b.accept('MWP-WRK-021', 'worker-a', 'work.checkpoint', progress, **offline())\n"
         "kinds = [e['kind'] for e in reconciled.outcome.event_documents]\n"
         "assert kinds == ['ext.missionweaveprotocol.core.resource_usage_recorded', 'work.checkpointed']\n"
         "reconciled"),
    code("show('MWP-WRK-022', 'accepted', f'one transaction: {kinds[0]} then {kinds[1]}; '\n"
         "     f\"the WorkItem's ledger: {b.state.budgets[('work_item', OFF)].used}\")"),
    md("MWP-WRK-020 on the Worker's side (`mwp_local/agents/worker/offline.py`): in a Sandbox, when "
       "the service goes down, a Worker buffers progress only for its already-active, reversible "
       "work under a live lease."),
    code("from mwp_local.delivery.config import Window\n"
         "from mwp_local.agents.worker.offline import go_offline\n"
         "sb2 = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', Path.cwd().parent / 'sample_missions' / 'learn.toml', seed=1)\n"
         "sb2.run(until=lambda s: any(str(i.state) == 'active' for i in s.log.state.work_items.values()))\n"
         "now = sb2.clock.now_us()\n"
         "outage = Window(at_us=now, until_us=now + 300_000_000, grace_us=300_000_000)\n"
         "buffered = [x for r in sb2.runtimes for x in go_offline(r, outage)[0]]\n"
         "assert buffered and all(x.binding['executionLeaseId'] for x in buffered)\n"
         "show('MWP-WRK-020', 'accepted', 'buffered offline: ' + ', '.join(f\"{x.agent}: {x.work_item_id.rsplit(':', 1)[-1]}\" for x in buffered))"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 06
notebook("06_artifacts_evidence_and_provenance.ipynb", [
    md("# Artifacts, Evidence and provenance\n\nArtifacts are immutable and content addressed; "
       "their content lives beside the log, the signed manifest in it (§13.1). A submission "
       "needs Evidence for every acceptance criterion (§13.2).\n\nRequirements shown: "
       "**MWP-WRK-023**, **MWP-WRK-024**, **MWP-WRK-025**, **MWP-WRK-026**, **MWP-WRK-027**, "
       "**MWP-WRK-028**."),
    SETUP,
    md("## MWP-WRK-023: a signed manifest\n\nThe manifest names the content hash, media type "
       "and schema, producer and Agent Card version, Mission/Group/WorkItem, sources, tool and "
       "model versions, creation time, classification, size and URI. Changing any field after "
       "signing breaks the signature: refused."),
    code("b.active(WID)\n"
         "manifest = b.artifact(WID, content=b'first draft of the patch')\n"
         "tampered = {**manifest, 'sizeBytes': 1}\n"
         "b.refuse('MWP-WRK-023', 'AUTH_INVALID_SIGNATURE', 'worker-a', 'artifact.publish', {**b.lease(WID), 'artifact': tampered})"),
    code("b.accept('MWP-WRK-023', 'worker-a', 'artifact.publish', {**b.lease(WID), 'artifact': manifest})"),
    md("## MWP-WRK-025: Evidence for every criterion\n\nThe contract asks for two criteria; a "
       "submission with Evidence for only one is refused, naming the missing one."),
    code("TWO = 'urn:mwp-local:work:reviewed'\n"
         "criteria = [{'criterionId': 'tests-pass', 'description': 'Tests pass', 'evidenceRequired': ['deterministic_test']},\n"
         "            {'criterionId': 'reviewed', 'description': 'Reviewed', 'evidenceRequired': ['reviewer_assessment']}]\n"
         "b.active(TWO, acceptanceCriteria=criteria)\n"
         "derived = b.artifact(TWO, content=b'the patch, reviewed', sources=[manifest['contentHash']])\n"
         "b.ok('worker-a', 'artifact.publish', {**b.lease(TWO), 'artifact': derived})\n"
         "tests = b.evidence(TWO, derived['contentHash'], criteria=['tests-pass'])\n"
         "b.refuse('MWP-WRK-025', 'INVALID_COMMAND', 'worker-a', 'work.submit',\n"
         "         {**b.lease(TWO), 'artifactHashes': [derived['contentHash']], 'evidence': [tests]})"),
    code("review = b.evidence(TWO, derived['contentHash'], agent='worker-a', criteria=['reviewed'], kind='reviewer_assessment')\n"
         "b.accept('MWP-WRK-025', 'worker-a', 'work.submit',\n"
         "         {**b.lease(TWO), 'artifactHashes': [derived['contentHash']], 'evidence': [tests, review]})"),
    md("## MWP-WRK-025: a result is verified only on its review (§13.2)\n\n"
       "`work.accept_result` carries the Coordinator's review: its signed Evidence and the "
       "record of the five stages, in order, ending `accepted`. No review, stages out of "
       "order, or a `rejected` verdict: each is `INVALID_COMMAND`, and the item stays "
       "`submitted`."),
    code("THREE = 'urn:mwp-local:work:three'\n"
         "b.active(THREE)\nb.submit(THREE)\n"
         "good = {'workItemId': THREE, **b.review(THREE).accept_result_payload()}\n"
         "b.refuse('MWP-WRK-025', 'INVALID_COMMAND', 'coordinator', 'work.accept_result', {'workItemId': THREE})"),
    code("stages = good['review']['stages']\n"
         "swapped = {**good['review'], 'stages': [stages[1], stages[0], *stages[2:]]}\n"
         "b.refuse('MWP-WRK-025', 'INVALID_COMMAND', 'coordinator', 'work.accept_result', {**good, 'review': swapped})"),
    code("rejected = {**good['review'], 'verdict': 'rejected'}\n"
         "b.refuse('MWP-WRK-025', 'INVALID_COMMAND', 'coordinator', 'work.accept_result', {**good, 'review': rejected})"),
    code("print(b.state.work_items[THREE].state)\n"
         "b.accept('MWP-WRK-025', 'coordinator', 'work.accept_result', good)"),
    md("## MWP-WRK-026: Evidence holds no private chain-of-thought\n\nEvidence records subject, "
       "criteria, method, result, producer, time and Artifacts. A member that would carry "
       "private reasoning is refused before anything is signed."),
    code("from mwp_local.artifacts.evidence import ensure_no_private_reasoning\n"
         "from mwp_local.protocol.errors import ProtocolError\n"
         "ensure_no_private_reasoning(tests)\n"
         "show('MWP-WRK-026', 'accepted', 'the Evidence above: subject, criteria, method, result, producer, time, Artifacts')"),
    code("try:\n"
         "    ensure_no_private_reasoning({**tests, 'details': {'chainOfThought': 'first I thought...'}})\n"
         "except ProtocolError as error:\n"
         "    refused = error\n"
         "show('MWP-WRK-026', 'rejected', f'{refused.code.value}: {refused.explanation}')"),
    md("## MWP-WRK-024: the provenance graph, and a hash check on every read\n\n**Click a "
       "node**: an Artifact shows its manifest, the Evidence citing it and a fresh re-hash of "
       "its content. The derived Artifact points back to its source."),
    code("from mwp_local.notebook.graphs import ProvenanceGraph\n"
         "graph = ProvenanceGraph(b)\n"
         "graph.inspect(derived['contentHash'])\n"
         "assert 'content re-hashed' in graph.inspector.value\n"
         "show('MWP-WRK-024', 'accepted', 'the stored content re-hashes to its sha256: identity')\n"
         "graph"),
    md("Now damage the stored bytes. The next read re-hashes them and refuses with "
       "`PROTOCOL_VIOLATION` naming the Artifact: nothing downstream sees tampered content."),
    code("from mwp_local.store.blobs import BlobStore\n"
         "blobs = BlobStore(b.directory / 'blobs')\n"
         "ref = blobs.ref(manifest['contentHash'])\n"
         "path = blobs.blob_path(ref.b3)\n"
         "path.chmod(0o644)\n"
         "path.write_bytes(b'first draft of the patcH')\n"
         "try:\n"
         "    blobs.get(manifest['contentHash'], name=manifest['artifactId'])\n"
         "except ProtocolError as error:\n"
         "    damaged = error\n"
         "show('MWP-WRK-024', 'rejected', f'{damaged.code.value}: {damaged.explanation}')"),
    md("The same walk in SQL (the `artifact_edges` view):"),
    code("from mwp_local.artifacts.provenance import LINEAGE_SQL\n"
         "b.sql(LINEAGE_SQL, {'artifact': derived['contentHash']})"),
    md("## MWP-WRK-027: Context Packages summarize, never replace, history\n\nThe "
       "Coordinator hands out a signed, versioned, scoped Context Package: the source Event "
       "range, Artifact hashes, decisions, constraints, open questions. A package signed by "
       "anyone but the Group's Coordinator or MissionOwner is refused on retrieval."),
    code("from mwp_local.artifacts.context_packages import PackageScope, context_package_from_log, verify_context_package\n"
         "scope = PackageScope(mission_id=bench.MISSION, group_id=bench.GROUP)\n"
         "package = context_package_from_log(b.log.store, b.state, scope, generator=b.org.get('coordinator'),\n"
         "                                   generated_at=b.now().text, constraints=['Stay within the EUR budget'])\n"
         "verify_context_package(package, b.state)\n"
         "events = package['sourceEventRange']\n"
         "show('MWP-WRK-027', 'accepted', f\"version {package['version']}, Events {events['fromSequence']}-{events['toSequence']}, \"\n"
         "     f\"{len(package['artifactHashes'])} Artifacts, {len(package['decisions'])} decisions, signed by the Coordinator\")"),
    code("forged = context_package_from_log(b.log.store, b.state, scope, generator=b.org.get('worker-a'),\n"
         "                                  generated_at=b.now().text)\n"
         "try:\n"
         "    verify_context_package(forged, b.state)\n"
         "except ProtocolError as error:\n"
         "    not_coordinator = error\n"
         "show('MWP-WRK-027', 'rejected', f'{not_coordinator.code.value}: {not_coordinator.explanation}')"),
    md("## MWP-WRK-028: Group content stays in its Mission\n\nA second Mission (its own Group) "
       "may not take this Mission's Artifact as a work input unless it is forwarded with "
       "permission or published as Organization knowledge; within its own Mission it may."),
    code("OTHER_GROUP, OTHER_MISSION = 'urn:mwp-local:group:other', 'urn:mwp-local:mission:other'\n"
         "b.create_mission(group=OTHER_GROUP, mission=OTHER_MISSION)\n"
         "b.refuse('MWP-WRK-028', 'AUTH_FORBIDDEN', 'coordinator', 'work.authorize',\n"
         "         {'workItemId': 'urn:mwp-local:work:other-impl', 'contract': b.contract(inputArtifacts=[derived['contentHash']])},\n"
         "         group=OTHER_GROUP)"),
    code("b.accept('MWP-WRK-028', 'coordinator', 'work.authorize',\n"
         "         {'workItemId': 'urn:mwp-local:work:next', 'contract': b.contract(inputArtifacts=[derived['contentHash']])})"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 07
notebook("07_delivery_replay_and_snapshots.ipynb", [
    md("# Delivery, replay and snapshots\n\nEvery committed Event reaches the agents **at least "
       "once** (§16). The sandbox has no WebSocket: an in-process **delivery bus** "
       "(`mwp_local/delivery/`) stands in for one authenticated connection per agent, "
       "multiplexing every Group, and the frames crossing it are the real §17 documents: "
       "`SUBSCRIBE`, `EVENT`, `ACK`, `PING` and `ERROR`. Faults are injected from a seeded "
       "generator. First you drive the bus by hand with agents that only listen "
       "(`mwp_local.notebook.delivery`), on the signed Events of a real run; at the "
       "end the sample mission `delivery.toml` runs through it with agents deciding.\n\n"
       "Requirements shown: **MWP-WRK-029** (deduplicate, keep order, never move the Cursor "
       "over a gap), **MWP-WRK-030** (Cursor, `ACK`, reconnection, `CURSOR_TOO_OLD` and signed "
       "snapshots), **MWP-WRK-008**, **MWP-WRK-031**, and inside the delivery run, bounded "
       "offline execution: **MWP-WRK-021**, **MWP-WRK-022** (notebook 05 takes the rules of "
       "§11.5 one at a time)."),
    code("%load_ext mwp_local.notebook\n"
         "import copy\n"
         "import tempfile\n"
         "from pathlib import Path\n"
         "\n"
         "from mwp_local.notebook import delivery as db\n"
         "from mwp_local.notebook.bench import coverage, show\n"
         "from mwp_local.notebook.delivery import SECOND, T0\n"
         "from IPython.display import display\n"
         "\n"
         "from mwp_local.delivery import frames\n"
         "from mwp_local.delivery.audience import visible_history\n"
         "from mwp_local.delivery.config import DeliveryConfig, Window\n"
         "from mwp_local.protocol.errors import ErrorCode, ProtocolError\n"
         "from mwp_local.protocol.jsontext import parse_strict\n"
         "from mwp_local.drivers.sandbox import Sandbox\n"
         "\n"
         "MISSIONS = Path.cwd().parent / 'sample_missions'\n"
         "sb = Sandbox(Path(tempfile.mkdtemp()) / 'sandbox', MISSIONS / 'learn.toml', seed=1)\n"
         "sb.run(max_steps=35)  # 'dev' is a member of the Group from step 34\n"
         "org, group = sb.log.org, 'urn:mwp-local:group:export-button'\n"
         "events = [parse_strict(e.document) for e in sb.log.store.events()]\n"
         "group_events = [e for e in events if e.get('groupId') == group]\n"
         "clean = db.listener(org, 'dev')\n"
         "clean.runtime.deliver(copy.deepcopy(events))  # every Event handed once, in order\n"
         "CLEAN = db.projections(clean.runtime.replica)  # what a member from sequence 1 ends with\n"
         "\n"
         "\n"
         "def clean_for(name):  # what `name` may receive (from its visibility start), once, in order\n"
         "    listener = db.listener(org, name)\n"
         "    listener.runtime.deliver(visible_history(org.get(name).id, copy.deepcopy(events)))\n"
         "    return db.projections(listener.runtime.replica)\n"
         "\n"
         "\n"
         "print(len(events), 'Events;', len(group_events), 'in the Group')\n"
         "[(e['sequence'], e['kind']) for e in group_events[:6]]"),
    md("## The §17 frames, as documents\n\nEach frame is a plain JSON document built by "
       "`mwp_local.delivery.frames` and checked against the official "
       "`websocket-frame.schema.json` with our own validators (the bus checks every frame that "
       "crosses it). `SUBSCRIBE` names an `afterSequence` **per Group** (one connection, every "
       "Group); `EVENT` carries a signed Event unchanged; `ACK` reports Cursors; `PING` carries a "
       "nonce and its reply echoes it in `replyToNonce`; `ERROR` carries a section-19 Error "
       "document (here `BACKPRESSURE` with retry guidance; a real `CURSOR_TOO_OLD` comes below)."),
    code("ids = frames.FrameIds(org.organization_id, 'notebook')\n"
         "at = '2026-07-15T09:00:00Z'\n"
         "billing = 'urn:mwp-local:group:billing'\n"
         "subscription = 'urn:mwp-local:subscription:dev:0'\n"
         "subscribe = frames.subscribe(ids.next(), subscription, {group: 4, billing: 0})\n"
         "event = frames.event(ids.next(), group_events[4])\n"
         "ack = frames.ack(ids.next(), {group: 5}, at)\n"
         "ping = frames.ping(ids.next(), frames.nonce_for('dev', 'hello'), at)\n"
         "echo = frames.nonce_for('bus', ping['nonce'])\n"
         "pong = frames.ping(ids.next(), echo, at, reply_to=ping['nonce'])\n"
         "paused = ProtocolError(ErrorCode.BACKPRESSURE, 'Paused for 1000 ms: acknowledge '\n"
         "                       'and delivery resumes.', details={'retryAfterMs': 1000})\n"
         "error = frames.error(ids.next(), paused, at, group_id=group)\n"
         "for frame in (subscribe, event, ack, ping, pong, error):\n"
         "    frames.check(frame)  # raises SCHEMA_VALIDATION_FAILED for a bad frame\n"
         "db.frame_html(subscribe, event, ack, ping, pong, error)"),
    md("A frame the schema refuses: an `ACK` that acknowledges nothing."),
    code("broken = frames.ack(ids.next(), {}, at)\n"
         "assert db.schema_verdict(broken).startswith('SCHEMA_VALIDATION_FAILED')\n"
         "db.frame_html(broken)"),
    md("## MWP-WRK-029: deduplicate, buffer, never move the Cursor over a gap\n\nA receiver (a "
       "`BusClient` in front of a real agent runtime with a local store) is handed `EVENT` "
       "frames for Group sequences 1, 2, 4, 5 and 4 again: 3 is missing. 4 and 5 are buffered, "
       "not folded; the second 4 is dropped by its Event ID; the durable Cursor (stored in the "
       "local file together with the Events) and the `ACK` stay at 2. **The gap is held "
       "back.**"),
    code("dev = db.listener(org, 'dev')\n"
         "for e in events:\n"
         "    if not e.get('groupId'):  # the Organization Events first\n"
         "        dev.receive(frames.event(ids.next(), e), T0)\n"
         "for n in (1, 2, 4, 5, 4):\n"
         "    dev.receive(frames.event(ids.next(), group_events[n - 1]), T0)\n"
         "ack = dev.acknowledge(T0)\n"
         "stored = dev.runtime.local.load()\n"
         "print('ACK:', frames.acknowledged(ack))\n"
         "print('buffered past the gap:', dev.runtime.inbox.gaps())\n"
         "print('stored Cursor:', stored.cursors[group])\n"
         "print('duplicates dropped:', dev.runtime.inbox.duplicates)\n"
         "assert frames.acknowledged(ack) == {group: 2} and stored.cursors[group] == 2\n"
         "assert {r.sequence for r in stored.events if r.group_id == group} == {1, 2}\n"
         "show('MWP-WRK-029', 'rejected', 'sequences 4 and 5 arrived over the gap at 3: '\n"
         "     'buffered, not folded, not stored; the durable Cursor and the ACK stay at 2; '\n"
         "     'the second 4 was dropped by its Event ID')"),
    code("dev.receive(frames.event(ids.next(), group_events[2]), T0)\n"
         "ack = dev.acknowledge(T0)\n"
         "assert frames.acknowledged(ack) == {group: 5}\n"
         "assert dev.runtime.local.load().cursors[group] == 5\n"
         "show('MWP-WRK-029', 'accepted', 'sequence 3 arrived: 3, 4 and 5 folded in order, '\n"
         "     'stored with the Cursor 5 in one local transaction, then ACKed')"),
    md("## Seeded faults on the bus (MWP-WRK-029)\n\nNow the real bus. Every `EVENT` may be "
       "**duplicated**, **delayed** (up to 30 s), or **dropped** (then resent from the "
       "acknowledged Cursor once `redeliver_after` passes without progress), and a delivery "
       "round may be **shuffled**. The generator is seeded: the same faults every run. Virtual "
       "time jumps from one bus wake-up to the next, so nothing sleeps. `Tape` records what the "
       "receiver was handed, in order, and every `ACK` it sent."),
    code("config = DeliveryConfig(duplicate=0.5, reorder=0.5, delay=0.5,\n"
         "                        max_delay_us=30 * SECOND, drop=0.2)\n"
         "bus = db.new_bus(org, config, seed=1)\n"
         "tape = db.Tape(db.listener(org, 'dev'))\n"
         "bus.attach(tape, T0)\n"
         "db.drive(bus, events)\n"
         "s = bus.stats\n"
         "print(f'faults: {s.duplicates} duplicated, {s.delays} delayed, {s.drops} dropped, '\n"
         "      f'{s.reorders} rounds shuffled, {s.redeliveries} resends from the Cursor')\n"
         "print('sequences as they arrived:', tape.arrivals(group))\n"
         "print('Cursors ACKed:', tape.acked(group))"),
    code("runtime = tape.inner.runtime\n"
         "dev_start = next(e['payload']['membership']['visibilityStartSequence']\n"
         "                 for e in group_events if e['kind'] == 'membership.changed'\n"
         "                 and e['payload']['membership']['member']['id'] == org.get('dev').id)\n"
         "# no ACK passed a sequence not handed yet (nothing is owed before dev's visibility start)\n"
         "assert tape.acks_over_a_gap(group, restored=dev_start - 1) == []\n"
         "assert db.projections(runtime.replica) == clean_for('dev')  # as if each came once\n"
         "show('MWP-WRK-029', 'accepted', f'{runtime.inbox.duplicates} duplicates dropped, '\n"
         "     f'out-of-order Events buffered, {len(tape.acked(group))} ACKs and none over a '\n"
         "     'gap; the projections equal a clean replay')"),
    md("## MWP-WRK-030: `ACK` permits clean-up, never deletes history\n\nThe Cursor is the "
       "highest contiguous sequence durably processed. An `ACK` of it lets the bus drop queued "
       "frames the Cursor covers (`dev`'s session queue is empty), but the history stays: the "
       "online window still holds every sequence, and the Group log holds every Event for "
       "good. An agent subscribing an hour later, from the start, gets all of it."),
    code("session = bus.sessions[tape.agent_id]\n"
         "online = sorted(bus.online[group])\n"
         "print('queued for dev:', len(session.queue), '| acknowledged:', session.acked[group],\n"
         "      '| online:', online[0], '..', online[-1])\n"
         "late = db.listener(org, 'ana')  # handed its Group from its visibility start (§8)\n"
         "bus.attach(late, T0 + 3600 * SECOND)\n"
         "db.drive(bus, [], start=T0 + 3600 * SECOND)\n"
         "assert not session.queue and online == list(range(1, len(group_events) + 1))\n"
         "assert db.projections(late.runtime.replica) == clean_for('ana')\n"
         "show('MWP-WRK-030', 'accepted', 'ACKed frames were cleaned up and nothing was '\n"
         "     'deleted: a newcomer replayed all it may see of the Group')"),
    md("## MWP-WRK-030: reconnection replays after the Cursor, duplicates included\n\n`coordinator`'s "
       "connection drops 5 s in (what was in flight is lost) and comes back at 40 s. It sends "
       "`SUBSCRIBE` with its durable Cursor as `afterSequence`; the bus replays after it, "
       "including Events `coordinator` had already buffered past a gap: duplicates, which its inbox "
       "drops."),
    code("away = Window(at_us=T0 + 5 * SECOND, until_us=T0 + 40 * SECOND, agent='coordinator')\n"
         "config = DeliveryConfig(drop=0.3, delay=0.3, max_delay_us=20 * SECOND,\n"
         "                        redeliver_after_us=60 * SECOND, disconnects=(away,))\n"
         "bus = db.new_bus(org, config, seed=5)\n"
         "tape = db.Tape(db.listener(org, 'coordinator'))\n"
         "bus.attach(tape, T0)\n"
         "db.drive(bus, events)\n"
         "((_, resubscribe),) = bus.subscriptions  # at first dev had no Cursor: no SUBSCRIBE\n"
         "after = resubscribe['groups'][0]['afterSequence']\n"
         "duplicates = tape.inner.runtime.inbox.duplicates\n"
         "assert after > 0 and bus.stats.disconnects == bus.stats.reconnects == 1\n"
         "assert db.projections(tape.inner.runtime.replica) == CLEAN\n"
         "assert tape.acks_over_a_gap(group) == []\n"
         "display(db.frame_html(resubscribe))\n"
         "show('MWP-WRK-030', 'accepted', f'reconnected with SUBSCRIBE afterSequence {after}: '\n"
         "     f'replayed after the Cursor, {duplicates} duplicates dropped, the projections '\n"
         "     'equal a clean replay')"),
    md("## MWP-WRK-030: a Cursor older than the online window: `CURSOR_TOO_OLD`\n\nThe bus keeps "
       "only `online_window` Events per Group online; older ones are served through a **Group "
       "Snapshot** signed by the Group Authority. `coordinator` is away for an hour; when it subscribes "
       "again its Cursor is older than the window, and the bus answers with an `ERROR` frame "
       "whose details carry a signed snapshot reference (snapshot ID, Group, sequence, and the "
       "hash of the snapshot document). Nothing is replayed from the old Cursor."),
    code("away = Window(at_us=T0 + 5 * SECOND, until_us=T0 + 3600 * SECOND, agent='coordinator')\n"
         "config = DeliveryConfig(online_window=5, disconnects=(away,))\n"
         "bus = db.new_bus(org, config, seed=6)\n"
         "dev = db.listener(org, 'coordinator', bus)  # it fetches snapshots from this bus\n"
         "tape = db.Tape(dev)\n"
         "bus.attach(tape, T0)\n"
         "db.drive(bus, events)\n"
         "old = bus.subscriptions[0][1]['groups'][0]['afterSequence']\n"
         "at_error = next(i for i, (kind, _, _) in enumerate(tape.handed) if kind == 'ERROR')\n"
         "too_old = tape.frames[at_error]\n"
         "through = too_old['error']['details']['snapshot']['throughSequence']\n"
         "later = [s for k, g, s in tape.handed[at_error:] if k == 'EVENT' and g == group]\n"
         "assert too_old['error']['code'] == 'CURSOR_TOO_OLD' and min(later) > through\n"
         "display(db.frame_html(too_old))\n"
         "show('MWP-WRK-030', 'rejected', f'SUBSCRIBE after {old}, but the online log starts '\n"
         "     f'after {bus.retention[group]}: CURSOR_TOO_OLD with a signed snapshot reference; '\n"
         "     'nothing replayed from the old Cursor')"),
    md("`coordinator` fetched the snapshot the reference names and verified it before restoring "
       "anything: the reference hash, the Group Authority's signature, the body hash against "
       "the signed `stateHash`, the Event IDs and every Event's own signature. Then it "
       "subscribed again after the snapshot sequence, and its projections equal a clean "
       "replay's."),
    code("from mwp_local.protocol.documents import validate\n"
         "\n"
         "reference = too_old['error']['details']['snapshot']\n"
         "bundle = bus.snapshot(reference['snapshotId'])\n"
         "validate('group-snapshot', bundle.snapshot)  # the official group-snapshot schema\n"
         "(restored,) = dev.restorations\n"
         "resumed = bus.subscriptions[-1][1]\n"
         "assert restored.refused is None\n"
         "assert resumed['groups'] == [{'groupId': group, 'afterSequence': through}]\n"
         "assert db.projections(dev.runtime.replica) == CLEAN\n"
         "assert tape.acks_over_a_gap(group, restored=through) == []\n"
         "print({k: bundle.snapshot[k] for k in ('snapshotId', 'throughSequence', 'stateHash')})\n"
         "display(db.frame_html(resumed))\n"
         "show('MWP-WRK-030', 'accepted', f'snapshot through {through} verified (hash, '\n"
         "     f'signature, stateHash, Events) and restored ({restored.events} Events folded); '\n"
         "     'resumed after it; the projections equal a clean replay')"),
    md("A snapshot altered after signing restores nothing. Change one Event in the body (its "
       "hash no longer matches the signed `stateHash`: `PROTOCOL_VIOLATION`), or the snapshot "
       "document itself (its signature fails: `AUTH_INVALID_SIGNATURE`): its state and "
       "Cursors stay as they were, and it subscribes again from its durable Cursor, so the bus "
       "names a snapshot signed anew (after three refusals in a row it stops asking and is "
       "*stuck*, and a run with a stuck agent is never reported a success)."),
    code("from mwp_local.delivery.snapshots import SnapshotBundle\n"
         "\n"
         "\n"
         "def tampered(part):\n"
         "    \"\"\"The snapshot with its body or its document altered, and a CURSOR_TOO_OLD\n"
         "    frame whose reference names it.\"\"\"\n"
         "    snapshot, body = copy.deepcopy(bundle.snapshot), copy.deepcopy(bundle.body)\n"
         "    if part == 'body':\n"
         "        body['events'][0]['payload']['tampered'] = True\n"
         "    else:\n"
         "        snapshot['policyLog'][0]['decision'] = 'rewritten'\n"
         "    forged = SnapshotBundle(snapshot=snapshot, body=body)\n"
         "    frame = copy.deepcopy(too_old)\n"
         "    frame['error']['details']['snapshot'] = forged.reference()\n"
         "    return forged, frame\n"
         "\n"
         "\n"
         "def restore(forged, frame):\n"
         "    \"\"\"A fresh dev told its Cursor is too old, and handed ``forged``.\"\"\"\n"
         "    victim = db.listener(org, 'dev')\n"
         "    victim.fetch = lambda snapshot_id: forged\n"
         "    before = db.projections(victim.runtime.replica)\n"
         "    (again,) = victim.receive(frame, T0)  # it asks again, from its durable Cursor\n"
         "    assert again['frameType'] == 'SUBSCRIBE'\n"
         "    assert db.projections(victim.runtime.replica) == before\n"
         "    assert victim.runtime.durable_cursors() == {}\n"
         "    (refused,) = victim.restorations\n"
         "    return refused\n"
         "\n"
         "\n"
         "for part in ('body', 'signature'):\n"
         "    refused = restore(*tampered(part))\n"
         "    assert refused.events == 0\n"
         "    display(show('MWP-WRK-030', 'rejected', f'a snapshot with a tampered {part}: '\n"
         "                 f'{refused.refused}; nothing restored, asked again from its Cursor'))"),
    md("## Per-Group backpressure (§17.3)\n\nA session may hold `group_buffer` unacknowledged "
       "frames per Group. Here a slow consumer never acknowledges. The noisy Group (the Events "
       "above) reaches 4 unacknowledged frames and is paused with `ERROR BACKPRESSURE` (retry "
       "guidance in its details), while a quiet Group (another Mission's, from a bench) is "
       "still served: each round takes `frames_per_round` frames Group by Group, so one Group "
       "cannot starve another."),
    code("from mwp_local.notebook import bench\n"
         "\n"
         "other = bench.Bench()\n"
         "other.create_mission()\n"
         "quiet = [parse_strict(e.document) for e in other.log.store.events()]\n"
         "quiet = [e for e in quiet if e.get('groupId')]\n"
         "config = DeliveryConfig(group_buffer=4, frames_per_round=3)\n"
         "bus = db.new_bus(org, config)\n"
         "slow = db.Slow('urn:missionweaveprotocol:agent:slow')\n"
         "for g in {e['groupId'] for e in group_events + quiet}:\n"
         "    bus.audience.grant(slow.agent_id, g)  # a member of both (the bus serves members)\n"
         "bus.attach(slow, T0)\n"
         "bus.publish(group_events + quiet, T0)\n"
         "for n in (1, 2, 3):\n"
         "    bus.pump(T0)\n"
         "    print(f'after round {n}:', slow.by_group())\n"
         "(backpressure,) = [f for f in slow.frames if f['frameType'] == 'ERROR']\n"
         "assert slow.by_group() == {'bench': len(quiet), 'export-button': 4}\n"
         "db.frame_html(backpressure)"),
    md("The consumer acknowledges what it has processed (Cursor 4). Once the announced pause "
       "is over, the noisy Group flows again from there (until the next 4 go unacknowledged)."),
    code("resume = T0 + config.retry_after_us\n"
         "cursor = frames.ack(ids.next(), {group: 4}, '2026-07-15T09:00:01Z')\n"
         "bus.on_frame(bus.sessions[slow.agent_id], cursor, resume)\n"
         "bus.pump(resume)\n"
         "print('after the ACK and the pause:', slow.by_group())\n"
         "assert slow.by_group()['export-button'] > 4"),
    md("## MWP-WRK-008: per-Group inbox, Cursor and queue, rebuilt by replay\n\nA Worker keeps "
       "them in its own local file. Restart it *without* that file: its queues are rebuilt by "
       "replaying the Group log, and they match what it had."),
    code("worker = next(r.name for r in sb.runtimes if r.name in ('ana', 'dev'))\n"
         "restart = sb.restart_agent(worker, delete_local_file=True)\n"
         "assert restart.queues_rebuilt == restart.queues_before\n"
         "show('MWP-WRK-008', 'accepted', f'{worker}: queues rebuilt from '\n"
         "     f'{restart.redelivered_events} re-delivered Events match the lost ones')"),
    md("The local file is a projection, never the truth. Write a bogus queue row into the "
       "Worker's file and restart it *from that file*: the stored queue disagrees with the "
       "Events it holds, so it is refused and rebuilt from them."),
    code("from mwp_local.store.agent_store import LocalBatch, QueueRow\n"
         "\n"
         "runtime = sb.runtime(worker)\n"
         "truth = runtime.work_queues()\n"
         "bogus = QueueRow(group_id=group, work_item_id='urn:mwp-local:work:bogus',\n"
         "                 state='queued', ownership_epoch=1, contract_version=1,\n"
         "                 urgency='normal', deadline='2026-07-20T00:00:00Z', lease_id=None,\n"
         "                 last_sequence=3)\n"
         "runtime.local.commit(LocalBatch(queues={group: (bogus,)}))\n"
         "again = sb.restart_agent(worker, delete_local_file=False)\n"
         "assert not again.stored_queues_matched and 'bogus' not in str(again.queues_rebuilt)\n"
         "show('MWP-WRK-008', 'rejected', 'the stored queue disagreed with its Events: '\n"
         "     'refused and rebuilt from the log')"),
    code("sb.run()"),
    md("## MWP-WRK-031: external side effects keyed for idempotency\n\nEach external "
       "operation carries a key derived from Mission ID, WorkItem ID, Ownership Epoch and the "
       "logical operation ID. Delivering the same call twice (at-least-once) performs it once: "
       "the repeat is answered from the record."),
    code("from mwp_local.agents.worker.slots import ExternalCall, attempt_key, execution_key\n"
         "from mwp_local.drivers.clock import timestamp\n"
         "from mwp_local.drivers.external import ExternalSystem, token_check_for\n"
         "\n"
         "b = bench.Bench()\n"
         "b.create_mission()\n"
         "WID, SHOP = 'urn:mwp-local:work:deploy', 'urn:mwp-local:service:shop'\n"
         "b.active(WID, allowedResources=[{'resource': SHOP, 'operations': ['write']}])\n"
         "agent = b.org.get('worker-a').id\n"
         "item = b.state.work_items[WID]\n"
         "token = b.log.capability_token(agent, item.execution_lease_id, b.now(), ['write'])\n"
         "key = attempt_key(execution_key(item.mission_id, WID, item.ownership_epoch), 'deploy')\n"
         "check = token_check_for(lambda t, op, us: b.log.check_token(t, op, timestamp(us)))\n"
         "external = ExternalSystem(check=check)\n"
         "deploy = ExternalCall(slot_id='slot-0', work_item_id=WID, resource=SHOP,\n"
         "                      operation='write', operation_id='deploy', idempotency_key=key,\n"
         "                      attempt=1, token=token)\n"
         "first = external.perform(agent, deploy, b.now_us)\n"
         "assert first.outcome == 'performed'\n"
         "show('MWP-WRK-031', 'accepted', f'performed once under key {key}')"),
    code("again = external.perform(agent, deploy, b.now_us)\n"
         "assert again.outcome == 'duplicate' and len(external.performed()) == 1\n"
         "show('MWP-WRK-031', 'rejected', 'the same call delivered again was not performed a '\n"
         "     'second time (answered from the record)')"),
    md("## Replay\n\nThe log is the only truth: drop every projection and rebuild them by "
       "replay, then check the log end to end."),
    code("from mwp_local.store.verify import verify_log\n"
         "\n"
         "sb.log.rebuild_projections(verify_signatures=True)\n"
         "assert verify_log(sb.log.org, sb.log.store).ok\n"
         "sb.sql('SELECT state, count(*) AS n FROM work_items GROUP BY state')"),
    md("## The sample mission `delivery.toml`, in step mode\n\nAll of it at once, with agents "
       "deciding: duplicates, reordering, delays, drops, a six-minute Group-service outage "
       "while `ana` and `dev` are working, then `dev` disconnected for an hour (it comes back "
       "to `CURSOR_TOO_OLD` and restores the snapshot). The run stops as soon as `dev` has "
       "restored its snapshot; the last line of the summary is the delivery bus's."),
    code("from mwp_local.authority.offline import BOUNDED_OFFLINE\n"
         "\n"
         "run = Sandbox(Path(tempfile.mkdtemp()) / 'delivery', MISSIONS / 'delivery.toml')\n"
         "offline_steps = []\n"
         "\n"
         "\n"
         "def watch(n, report):\n"
         "    if BOUNDED_OFFLINE in report.command.get('extensions', {}):\n"
         "        offline_steps.append(report)\n"
         "\n"
         "\n"
         "def restored(sandbox):\n"
         "    return any(c.restorations for c in sandbox.delivery.clients.values())\n"
         "\n"
         "\n"
         "summary = run.run(until=restored, progress=watch)\n"
         "print('\\n'.join(summary.lines()))\n"
         "run.delivery.clients[run.runtime('dev').member.id].restorations"),
    md("### Bounded offline execution in the run (MWP-WRK-020, MWP-WRK-021, MWP-WRK-022)\n\n"
       "During the outage `ana` and `dev` kept their already-active, reversible work going "
       "(MWP-WRK-020) and each buffered a signed `work.checkpoint` carrying the critical "
       "bounded-offline binding. When the service came back, before any agent acted, each was "
       "rebased (binding unchanged; current `issuedAt` and epochs, a new Action ID, re-signed) "
       "and submitted (MWP-WRK-021). `ana`'s was reconciled: the offline usage charged and the "
       "checkpoint applied in one transaction. `dev`'s WorkItem `sketch` allows only 60 "
       "wall-clock seconds, so six offline minutes overflow it: the charge and the checkpoint "
       "are both refused with `BUDGET_EXCEEDED`, with no partial Event (MWP-WRK-022). Notebook "
       "05 shows each rule of §11.5 accepted and refused on its own (the lease window, the "
       "grace deadline, a changed owner, the Conversation); the steps below draw themselves."),
    code("(record,) = run.delivery.outages\n"
         "reconciled, overflow = offline_steps\n"
         "original = next(b.original for b in record.buffered if b.agent == reconciled.agent)\n"
         "\n"
         "\n"
         "def binding(command):\n"
         "    return command['extensions'][BOUNDED_OFFLINE]['data']\n"
         "\n"
         "\n"
         "assert binding(reconciled.command) == binding(original)\n"
         "assert reconciled.command['actionId'] != original['actionId']\n"
         "assert reconciled.command['signature']['value'] != original['signature']['value']\n"
         "times = ('disconnectedAt', 'bufferedAt', 'leaseExpiresAt', 'graceDeadline')\n"
         "print({k: binding(original)[k] for k in (*times, 'usageDelta')})\n"
         "show('MWP-WRK-021', 'accepted', f'{reconciled.agent}: the binding kept unchanged; '\n"
         "     'the Command rebased (current issuedAt and epochs, new Action ID '\n"
         "     f\"{reconciled.command['actionId']}) and re-signed\")"),
    code("kinds = [e['kind'] for e in reconciled.events]\n"
         "assert kinds[-1] == 'work.checkpointed'\n"
         "assert not overflow.accepted and overflow.code == 'BUDGET_EXCEEDED'\n"
         "assert not overflow.events\n"
         "display(reconciled, overflow)\n"
         "display(show('MWP-WRK-022', 'accepted', 'one transaction: ' + ', then '.join(kinds)))\n"
         "show('MWP-WRK-022', 'rejected', f'{overflow.agent}: {overflow.code}, no partial Event')"),
    md("Let the bus deliver everything still in flight (no agent acts meanwhile): every "
       "member of the Group holds the same projections as a clean replay of the Group log. "
       "A Group's Events reach its members only (§8, §17.2): `ops` was never offered work "
       "here, so it received none of them, not even the Mission's goal. The Sandbox draws "
       "itself too."),
    code("from mwp_local.store.group_log import replay\n"
         "\n"
         "run.settle_delivery()\n"
         "truth = db.projections(replay(run.log.org, run.log.store))\n"
         "members = [r for r in run.runtimes if r.replica.groups]\n"
         "from_one = [r for r in members if not r.partial_groups]  # members from sequence 1\n"
         "assert from_one and all(db.projections(r.replica) == truth for r in from_one)\n"
         "ops = run.runtime('ops')\n"
         "handed = run.delivery.bus.handed.get(ops.member.id, {})\n"
         "assert not ops.replica.groups and not ops.replica.missions and not handed\n"
         "print(f'ops received {sum(len(s) for s in handed.values())} Group Events; '\n"
         "      f'{len(members)} members are at the head')\n"
         "run"),
    # -- issue 26: a late joiner starts from its Context Package (own block)
    md("## MWP-WRK-027 and MWP-WRK-028: a late joiner starts from its Context Package (§8, "
       "§13.3)\n\nA Worker offered work "
       "in a Group it is not a member of is granted a provisional Membership whose "
       "`visibilityStartSequence` is the Group's next sequence: delivery hands it the Group "
       "from there, the granting Event first, and **nothing from before**. What it needs from "
       "before (the Mission's contract, its WorkItem's `work.authorized`, the WorkItems it "
       "depends on) comes from the signed Context Package the Membership Event names: it "
       "fetches the Events the package cites through the isolation gate "
       "(`fetch_cited_events`), checks each, seeds its replica with them and folds the "
       "delivered tail on top. (Members from sequence 1, the MissionOwner and the Coordinator, "
       "hold the whole history, as above.)"),
    code("late = next(r for r in members if r.partial_groups)\n"
         "g = sorted(late.partial_groups)[0]\n"
         "grant = next(e for e in (parse_strict(x.document) for x in run.log.store.events(g))\n"
         "             if e['kind'] == 'membership.changed'\n"
         "             and e['payload']['membership']['member']['id'] == late.member.id)\n"
         "start = grant['payload']['membership']['visibilityStartSequence']\n"
         "package = grant['payload']['contextPackage']\n"
         "handed = run.delivery.bus.handed[late.member.id][g]\n"
         "assert min(handed) == start and grant['sequence'] >= start  # nothing framed before it\n"
         "seeded = dict(late.seeded)\n"
         "assert seeded[package['contextPackageId']] > 0  # cited Events fetched through the gate\n"
         "held = {r.sequence for r in late.local.load().events if r.group_id == g} if late.local else set()\n"
         "print(f\"{late.name}: visibility in {g.rsplit(':', 1)[-1]} starts at {start}; first \"\n"
         "      f\"sequence handed {min(handed)}; {seeded[package['contextPackageId']]} cited \"\n"
         "      f\"Events fetched through the gate; package cites \"\n"
         "      f\"{len(package['sourceEventRange']['eventIds'])} Events\")\n"
         "show('MWP-WRK-027', 'accepted', f'{late.name} started from its Context Package: the '\n"
         "     'Events it cites, fetched through the gate, then the tail from its visibility start')"),
    code("# A non-member fetching the same package's Events is refused by the gate, and learns\n"
         "# nothing (AUTH_FORBIDDEN or MEMBERSHIP_REQUIRED, a section-19 code).\n"
         "from mwp_local.artifacts.context_packages import fetch_cited_events\n"
         "\n"
         "try:\n"
         "    fetch_cited_events(run.log.state, run.log.store, package, ops.member.id)\n"
         "    raise AssertionError('the gate let a non-member through')\n"
         "except ProtocolError as refused:\n"
         "    code_ = refused.code.value\n"
         "assert code_ in ('MEMBERSHIP_REQUIRED', 'AUTH_FORBIDDEN')\n"
         "show('MWP-WRK-028', 'rejected', f'ops asked for the cited Events: {code_}')"),
    md("## One Organization per sandbox: no Event ID names two Events\n\nA recipient "
       "deduplicates by Event ID (**MWP-WRK-029**), and an analyst may merge the logs of several "
       "sandboxes. So each sandbox is its own Organization, its ID derived from the seed and the "
       "mission (its name and content hash), and every identifier it derives (Event, offer, "
       "Action, frame IDs) is scoped by it (§2). The same mission under another seed fills the "
       "same Group at the same sequences, and shares no Event ID with the first run."),
    code("other = Sandbox(Path(tempfile.mkdtemp()) / 'other', MISSIONS / 'learn.toml', seed=2)\n"
         "other.run(max_steps=25)\n"
         "other_events = [parse_strict(e.document) for e in other.log.store.events()]\n"
         "print(sb.organization_id, other.organization_id, sep='\\n')\n"
         "places = {(e.get('groupId'), e.get('sequence')) for e in events}\n"
         "same_places = places & {(e.get('groupId'), e.get('sequence')) for e in other_events}\n"
         "shared = {e['eventId'] for e in events} & {e['eventId'] for e in other_events}\n"
         "assert same_places and not shared\n"
         "show('MWP-WRK-029', 'accepted', f'{len(same_places)} positions in both logs, no Event ID '\n"
         "     'in common: a recipient of both runs drops none of their Events as a duplicate')"),
    *COVERAGE,
])  # fmt: skip

# ---------------------------------------------------------------------- 08
notebook("08_sql_analytics.ipynb", [
    md("# SQL analytics of a run\n\nThe log is a DuckDB file with typed views. Here you run "
       "the learn mission (`sample_missions/learn.toml`: three WorkItems, Workers `ana` and "
       "`dev`), **export** its signed Events, **import** them into a fresh sandbox (every "
       "signature and every transition is checked on the way in), and analyse the imported "
       "log. `mwp-local init --like` makes that fresh sandbox: the run's Organization with an "
       "empty log (an import is as strict as the live Authority, so the Events must belong to "
       "the Organization that receives them); the import brings in the run's Events, the Agent "
       "Cards of `ana`, `dev` and the others included, so every query below is about the run's "
       "agents."),
    code("import subprocess, sys, tempfile\nfrom pathlib import Path\n"
         "from mwp_local.drivers.sandbox import Sandbox\n"
         "work = Path(tempfile.mkdtemp())\n"
         "sb = Sandbox(work / 'run', Path.cwd().parent / 'sample_missions' / 'learn.toml', seed=1)\n"
         "sb.run()\n"
         "sb.close()\n"
         "cli = [sys.executable, '-m', 'mwp_local.cli']\n"
         "for args in (['export', str(work / 'run'), '--jsonl', str(work / 'events.jsonl')],\n"
         "             ['init', str(work / 'imported'), '--like', str(work / 'run')],\n"
         "             ['import', str(work / 'imported'), str(work / 'events.jsonl')]):\n"
         "    out = subprocess.run(cli + args, check=True, capture_output=True, text=True).stdout\n"
         "    print(out.strip().splitlines()[0])  # the first line says what it did\n"
         "imported = str(work / 'imported')"),
    md("## The `%%mwp_sql` magic\n\n`$name` parameters are bound from your variables (never "
       "pasted into the SQL); `-o var` keeps the result."),
    code("%load_ext mwp_local.notebook"),
    code("%%mwp_sql imported -o kinds\n"
         "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind"),
    code("kinds.num_rows"),
    md("Which Agents acted: the run's `ana` and `dev`, the Coordinator and the MissionOwner:"),
    code("%%mwp_sql imported\n"
         "SELECT actor_type, actor_id, count(*) AS n FROM events\n"
         "WHERE actor_type <> 'service' GROUP BY ALL ORDER BY n DESC, actor_id"),
    md("A result is a pyarrow Table; `.to_pandas()` turns it into a DataFrame (pandas comes "
       "with the `notebook` extra, which `make demo` installs):"),
    code("kinds.to_pandas().head()"),
    md("Time each WorkItem spent in each state: `work_item_states` holds every stay, with its "
       "`duration` as an interval (every view's timestamps are `TIMESTAMPTZ`):"),
    code("%%mwp_sql imported\n"
         "SELECT work_item_id, state, entered_at, duration\n"
         "FROM work_item_states ORDER BY work_item_id, entered_position"),
    code("agent = 'urn:missionweaveprotocol:agent:ana'"),
    code("%%mwp_sql imported\n"
         "SELECT kind, count(*) AS n FROM events WHERE actor_id = $agent GROUP BY kind ORDER BY n DESC"),
    md("## The SQL console\n\nThe same, as a widget: type a query, press **run**."),
    code("from mwp_local.notebook.sql_console import SqlConsole\n"
         "console = SqlConsole(imported, 'SELECT lease_type, state, count(*) AS n FROM leases GROUP BY ALL ORDER BY ALL')\n"
         "console.run()\n"
         "console"),
    md("## Charts\n\nWhere you would rather look than read. A busier log first: a small "
       "market where Workers are scarce: one is paused for the first hour (its offers expire), "
       "two have a single slot each (they decline for capacity), and an urgent WorkItem goes "
       "to several at once (the losers' offers are `lost_race`). The charts are matplotlib "
       "images: they render in JupyterLab, in the saved notebook and in exported HTML, "
       "offline. Each draws one analysis query of `docs/sql.md`, shown above it."),
    code("from mwp_local.drivers.mission_file import parse\n"
         "from mwp_local.notebook import charts\n"
         "workers = [{'name': f'w{i}', 'capabilities': ['mwp.build@1.0.0'], 'max_concurrency': 1}\n"
         "           for i in (1, 2, 3)]\n"
         "part = {'goal': 'Build part {n}', 'capability': 'mwp.build@1.0.0', 'duration': '20m',\n"
         "        'budget': {'financial': 20}}\n"
         "market = parse({\n"
         "    'name': 'market', 'sandbox': {'seed': 5, 'start': '2026-07-15T09:00:00Z'},\n"
         "    'agents': [{'name': 'coord', 'capabilities': ['mwp.coordination@1.0.0'], 'max_concurrency': 4},\n"
         "               *workers],\n"
         "    'faults': [{'agent': 'w1', 'kind': 'pause', 'at': 0, 'for': '1h'}],\n"
         "    'missions': [{'id': 'm', 'objective': 'Build a thing in parts', 'owner': 'olga',\n"
         "                  'coordinator': 'coord', 'deadline': '3d',\n"
         "                  'budget': {'financial': 500, 'tool_calls': 500, 'compute_seconds': 500000},\n"
         "                  'work': [{'id': 'part', 'count': 6, **part},\n"
         "                           {'id': 'hot', **part, 'goal': 'Fix it now', 'urgency': 'critical'}]}],\n"
         "}, name='market')\n"
         "busy = Sandbox(work / 'market', market)\n"
         "busy.run()\n"
         "busy.close()\n"
         "busy = str(work / 'market')"),
    code("%%mwp_sql busy\n"
         "SELECT agent_id, status, count(*) AS offers FROM offers GROUP BY ALL ORDER BY ALL"),
    *[cell
      for name, title in (("time_per_state", "Time per WorkItem state"),
                          ("concurrent_executions", "Worker load over time"),
                          ("declines_by_reason", "Declines by reason"))
      for cell in (md(f"### {title}\n\n{ANALYSES[name].question}"),
                   code(f"%%mwp_sql busy -o {name}\n{ANALYSES[name].query}"),
                   code(f"charts.{CHART[name]}({name})"))],
])  # fmt: skip
