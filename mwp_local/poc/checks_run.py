"""Checks on what the run did: two concurrent Missions, graph stages, scheduling, slots,
preemption, review, Approval, child Missions, proposals, provenance and knowledge (§22).

Every check reads Events (typed columns and payloads) from the log; none reads a flag.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from .evidence import Evidence, micros, signature_ok
from .registry import Verdict, check, verdict

S = "run"
STAGES = {
    "analyse": "requirements analysis",
    "implement": "implementation",
    "test": "testing",
    "review": "code review",
    "integrate": "integration",
}


def _caps(item: dict[str, Any]) -> list[str]:
    return [c["id"] for c in item["contract"]["requiredCapabilities"]]


def authorized(ev: Evidence) -> dict[str, dict[str, Any]]:
    return {e["workItemId"]: e["payload"]["workItem"] for e in ev.of("work.authorized")}


@check("concurrent_roots", "two root Missions ran at the same time", S)
def concurrent_roots(ev: Evidence) -> Verdict:
    spans = []
    for created in ev.roots:
        mid = created["payload"]["missionId"]
        end = [e for e in ev.of("mission.approved") if e["payload"]["missionId"] == mid]
        stop = micros(end[-1]["occurredAt"]) if end else 2**62
        spans.append((micros(created["occurredAt"]), stop, mid))
    overlap = [
        (a[2], b[2]) for a in spans for b in spans if a[2] < b[2] and a[0] < b[1] and b[0] < a[1]
    ]
    return verdict(
        bool(overlap), f"overlapping roots: {overlap[:1]}", f"roots: {len(spans)}, none overlap"
    )


@check("signed_root_creation", "each root Mission was created by a signed human Command", S)
def signed_root_creation(ev: Evidence) -> Verdict:

    bad = []
    for e in ev.roots:
        cmd = ev.command(e)
        if cmd is None or cmd["actor"]["type"] != "human" or not signature_ok(ev, cmd):
            bad.append(e["payload"]["missionId"])
    return verdict(
        len(ev.roots) >= 2 and not bad,
        f"{len(ev.roots)} roots, human-signed",
        f"unsigned or too few: {bad or len(ev.roots)}",
    )


@check("shared_worker", "at least one Worker worked for both Missions", S)
def shared_worker(ev: Evidence) -> Verdict:
    groups: dict[str, set[str]] = {}
    for e in ev.of("work.started"):
        groups.setdefault(e["actor"]["id"], set()).add(e["groupId"])
    shared = sorted(a for a, g in groups.items() if len(g) >= 2)
    return verdict(bool(shared), f"shared: {shared}", "no Worker started work in two Groups")


@check(
    "graph_stages",
    "one Mission ran analysis, implementation, testing, review and integration as dependent "
    "stages, then human Approval",
    S,
)
def graph_stages(ev: Evidence) -> Verdict:
    items = authorized(ev)
    for created in ev.roots:
        mid = created["payload"]["missionId"]
        mine = {w: i for w, i in items.items() if i["missionId"] == mid}
        stages = {
            key: [w for w, i in mine.items() if any(key in c for c in _caps(i))] for key in STAGES
        }
        if not all(stages.values()):
            continue
        deps = {w: set(i["contract"]["dependencyWorkItemIds"]) for w, i in mine.items()}
        chained = (
            any(deps[i] & set(stages["implement"]) for i in stages["test"])
            and any(deps[i] & set(stages["analyse"]) for i in stages["implement"])
            and any(
                deps[i] & (set(stages["test"]) | set(stages["review"])) for i in stages["integrate"]
            )
        )
        approved = [
            e
            for e in ev.of("mission.approved")
            if e["payload"]["missionId"] == mid and e["actor"]["type"] == "human"
        ]
        if chained and approved:
            return True, f"{mid}: {', '.join(STAGES.values())} chained, approved by a human"
    return False, "no Mission has all five stages chained and a human Approval"


@check("both_roots_approved", "both root Missions were approved by their human owners", S)
def both_roots_approved(ev: Evidence) -> Verdict:
    states = {r["mission_id"]: r["state"] for r in ev.sql("SELECT mission_id, state FROM missions")}
    roots = [e["payload"]["missionId"] for e in ev.roots]
    ok = len(roots) >= 2 and all(states.get(m) == "approved" for m in roots)
    return verdict(ok, f"{len(roots)} roots approved", f"states: {[states.get(m) for m in roots]}")


@check(
    "child_mission_approved",
    "a child Mission was created for a WorkItem, approved, and its parent WorkItem verified",
    S,
)
def child_mission_approved(ev: Evidence) -> Verdict:
    rows = ev.sql(
        "SELECT e.from_id AS child, e.to_id AS parent_item, m.state, w.state AS item_state "
        "FROM artifact_edges e JOIN missions m ON m.mission_id = e.from_id "
        "JOIN work_items w ON w.work_item_id = e.to_id WHERE e.edge = 'child_of'"
    )
    good = [r for r in rows if r["state"] == "approved" and r["item_state"] == "verified"]
    return verdict(
        bool(good), f"{good[0]['child']} approved" if good else "", f"child Missions: {rows}"
    )


@check(
    "per_group_queues",
    "a Worker held queued or active work in two Groups at once (distinct per-Group queues)",
    S,
)
def per_group_queues(ev: Evidence) -> Verdict:
    holding: dict[str, dict[str, str]] = {}  # agent -> item -> group
    for e in ev.events:
        wid, to_state = e.get("workItemId"), e.get("toState")
        if wid is None or to_state is None:
            continue
        owner = ev.owner_at(wid, e["_position"])
        for agent in holding:
            holding[agent].pop(wid, None)
        if owner and to_state in ("queued", "active", "blocked"):
            holding.setdefault(owner, {})[wid] = e["groupId"]
            if len(set(holding[owner].values())) >= 2:
                return True, f"{owner} held work in {sorted(set(holding[owner].values()))}"
    return False, "no Worker ever held work in two Groups at the same time"


@check(
    "both_groups_served",
    "the shared Worker alternated between the Groups (global weighted-fair scheduling)",
    S,
)
def both_groups_served(ev: Evidence) -> Verdict:
    starts: dict[str, list[str]] = {}
    for e in ev.of("work.started"):
        starts.setdefault(e["actor"]["id"], []).append(e["groupId"])
    for agent, seq in starts.items():
        switches = sum(1 for a, b in itertools.pairwise(seq) if a != b)
        if len(set(seq)) >= 2 and switches >= 2:
            return True, f"{agent} switched Groups {switches} times over {len(seq)} starts"
    return False, "no Worker served two Groups in turn"


@check("multiple_slots_active", "a Worker ran two WorkItems at the same time (execution slots)", S)
def multiple_slots_active(ev: Evidence) -> Verdict:
    spans = ev.active_spans
    for i, a in enumerate(spans):
        for b in spans[i + 1 :]:
            if a[0] == b[0] and a[2] != b[2] and a[3] < b[4] and b[3] < a[4]:
                return True, f"{a[0]}: {a[2]} and {b[2]} active together"
    return False, "no Worker had two active WorkItems at once"


def _preemptions(ev: Evidence) -> list[dict[str, Any]]:
    return [
        e
        for e in ev.of("work.checkpointed")
        if e["payload"]["checkpoint"]["progress"].get("currentPhase") == "preempted"
    ]


@check(
    "safe_checkpoint_preemption",
    "preemption happened only at a checkpoint (work.checkpointed, lease released)",
    S,
)
def safe_checkpoint_preemption(ev: Evidence) -> Verdict:
    pre = _preemptions(ev)
    bad = [
        e["workItemId"]
        for e in pre
        if e["toState"] != "queued"
        or not any(
            lease.get("closureReason") == "checkpoint" for lease in e["payload"].get("leases", [])
        )
    ]
    return verdict(
        bool(pre) and not bad,
        f"{len(pre)} preemption(s) at checkpoints",
        f"preemptions {len(pre)}, unsafe {bad}",
    )


@check("preempted_work_resumed", "preempted work was resumed from its checkpoint and verified", S)
def preempted_work_resumed(ev: Evidence) -> Verdict:
    for e in _preemptions(ev):
        later = [
            x
            for x in ev.work_payloads(e["workItemId"])
            if x["_position"] > e["_position"] and x["kind"] == "work.started"
        ]
        state = ev.sql(
            "SELECT state FROM work_items WHERE work_item_id = $w", {"w": e["workItemId"]}
        )
        if later and state and state[0]["state"] == "verified":
            return True, f"{e['workItemId']} restarted after its checkpoint and verified"
    return False, "no preempted WorkItem resumed to verification"


@check("unsafe_work_not_preempted", "no WorkItem was preempted before its first safe point", S)
def unsafe_work_not_preempted(ev: Evidence) -> Verdict:
    pre = _preemptions(ev)
    bad = []
    for e in pre:
        started = [
            x
            for x in ev.work_payloads(e["workItemId"])
            if x["kind"] == "work.started" and x["_position"] < e["_position"]
        ]
        if not started or micros(e["occurredAt"]) <= micros(started[-1]["occurredAt"]):
            bad.append(e["workItemId"])
    return verdict(
        bool(pre) and not bad,
        f"{len(pre)} preemption(s), each after running",
        f"preemptions {len(pre)}, at an unsafe point: {bad}",
    )


def _urgent(ev: Evidence) -> list[dict[str, Any]]:
    return [
        i
        for i in authorized(ev).values()
        if i["contract"].get("requestedUrgency") in ("high", "critical")
    ]


@check(
    "high_priority_arrival",
    "an urgent WorkItem arriving later was started before older queued work of its Worker",
    S,
)
def high_priority_arrival(ev: Evidence) -> Verdict:
    first_root = min((micros(e["occurredAt"]) for e in ev.roots), default=0)
    for item in _urgent(ev):
        wid = item["workItemId"]
        auth = next(e for e in ev.of("work.authorized") if e["workItemId"] == wid)
        starts = [e for e in ev.work_payloads(wid) if e["kind"] == "work.started"]
        if micros(auth["occurredAt"]) <= first_root or not starts:
            continue
        first = starts[0]
        worker = first["actor"]["id"]
        # What that Worker had queued (accepted, not started) when the urgent item arrived.
        state: dict[str, str] = {}
        for e in ev.events:
            if e["_position"] >= auth["_position"]:
                break
            if e.get("workItemId") and e.get("toState"):
                state[e["workItemId"]] = e["toState"]
        waiting = {
            w
            for w, st in state.items()
            if st == "queued" and ev.owner_at(w, auth["_position"]) == worker
        }
        overtaken = [
            e["workItemId"]
            for e in ev.of("work.started")
            if auth["_position"] < e["_position"] < first["_position"]
            and e["workItemId"] in waiting
        ]
        waited = micros(first["occurredAt"]) - micros(auth["occurredAt"])
        if overtaken:
            return False, f"{wid} waited behind {overtaken} on {worker}"
        return True, (
            f"{wid} arrived later, started on {worker} {waited / 1e6:.0f} s after authorization, "
            f"ahead of its {len(waiting)} queued item(s)"
        )
    return False, "no urgent WorkItem arrived after the first Mission started"


def _names_any(text: str, ids: Iterable[str]) -> bool:
    """Whether ``text`` contains any of ``ids``."""
    return any(i in text for i in ids)


@check("urgent_group_isolated", "the urgent WorkItem's Events stayed in its own Group", S)
def urgent_group_isolated(ev: Evidence) -> Verdict:
    urgent = {i["workItemId"]: i for i in _urgent(ev)}
    if not urgent:
        return False, "no urgent WorkItem"
    groups = {u["groupId"] for u in urgent.values()}
    stray = [
        e["eventId"]
        for e in ev.events
        if e.get("groupId") not in groups and _names_any(str(e.get("payload")), urgent)
    ]
    return verdict(
        not stray,
        f"{len(urgent)} urgent WorkItem(s), none named in another Group",
        f"named elsewhere: {stray[:3]}",
    )


@check(
    "blocked_checkpointed_resumed", "work that blocked was checkpointed, unblocked and resumed", S
)
def blocked_checkpointed_resumed(ev: Evidence) -> Verdict:
    for b in ev.of("work.blocked"):
        wid = b["workItemId"]
        after = [e for e in ev.work_payloads(wid) if e["_position"] > b["_position"]]
        kinds = [e["kind"] for e in after]
        if (
            "checkpoint" in b["payload"]
            and "work.unblocked" in kinds
            and "work.started" in kinds[kinds.index("work.unblocked") :]
        ):
            return True, f"{wid}: blocked with a checkpoint, unblocked, started again"
    return False, "no blocked WorkItem resumed"


@check(
    "retries_with_backoff", "a failed attempt was retried no sooner than its contract's backoff", S
)
def retries_with_backoff(ev: Evidence) -> Verdict:
    from ..agents.worker.retries import iso_duration_us

    contracts = {w: i["contract"] for w, i in authorized(ev).items()}
    found = []
    for f in ev.of("work.failed"):
        if f["actor"]["id"] in ev.coordinators or f["actor"]["type"] != "agent":
            continue
        wid = f["workItemId"]
        retry = [
            e
            for e in ev.work_payloads(wid)
            if e["_position"] > f["_position"] and e["kind"] == "work.started"
        ]
        if not retry:
            continue
        policy = contracts[wid]["retryPolicy"]
        backoff = iso_duration_us(policy.get("maxDelay", "PT0S"))
        delay = micros(retry[0]["occurredAt"]) - micros(f["occurredAt"])
        if delay < backoff or delay <= 0:
            return (
                False,
                f"{wid} retried {delay / 1e6:.0f} s after failing, backoff {backoff / 1e6:.0f} s",
            )
        found.append(f"{wid}: {delay / 1e6:.0f} s ≥ {backoff / 1e6:.0f} s")
    return verdict(bool(found), "; ".join(found[:2]), "no failed attempt was retried")
