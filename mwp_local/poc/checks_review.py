"""Checks on review, Approval and the Mission graph's growth: the ordered review pipeline,
reviewer Evidence, verification before Approval, exact signed human Approvals and change
requests, provenance, Worker proposals authorized by the Coordinator with their dependency
inserted once, revised contracts, reusable knowledge and Worker-to-Worker Messages (§22).
"""

from __future__ import annotations

from collections import Counter

from .evidence import Evidence, signature_ok
from .registry import Verdict, check, verdict

S = "review"
#: The stages of §13.2, in order.
REVIEW_ORDER = ("integrity", "deterministic", "reviewer", "evaluation", "retention")


@check(
    "coordinator_review_pipeline",
    "every accepted result carries a review record in the order of §13.2",
    S,
)
def coordinator_review_pipeline(ev: Evidence) -> Verdict:
    accepted = [e for e in ev.of("work.result.accepted") if "childMissionId" not in e["payload"]]
    bad = []
    for e in accepted:
        review = e["payload"].get("review", {})
        stages = [s["stage"] for s in review.get("stages", [])]
        in_order = stages == [x for x in REVIEW_ORDER if x in stages]
        ran = "integrity" in stages and "evaluation" in stages
        satisfied = bool(review.get("criteria")) and all(
            c["status"] == "satisfied" for c in review["criteria"]
        )
        if not (in_order and ran and satisfied and review.get("verdict") == "accepted"):
            bad.append(e["workItemId"])
    orders = Counter(
        " → ".join(s["stage"] for s in e["payload"]["review"]["stages"]) for e in accepted
    )
    return verdict(
        bool(accepted) and not bad,
        f"{len(accepted)} results reviewed in order: {dict(orders)}",
        f"out of order or unreviewed: {bad}",
    )


@check(
    "reviewer_evidence",
    "a semantic criterion was assessed by a reviewer Agent other than the producer",
    S,
)
def reviewer_evidence(ev: Evidence) -> Verdict:
    for e in ev.of("work.result.accepted"):
        for c in e["payload"].get("review", {}).get("criteria", []):
            if c["criterionId"] == "semantic-review" and c.get("independent"):
                return True, f"{e['workItemId']}: independent semantic review"
    return False, "no independent semantic review"


@check(
    "verification_before_approval",
    "each Mission was submitted for Approval only when every WorkItem was verified",
    S,
)
def verification_before_approval(ev: Evidence) -> Verdict:
    bad = []
    for s in ev.of("mission.submitted_for_approval"):
        mid = s["payload"]["missionId"]
        state: dict[str, str] = {}
        for e in ev.events:
            if e["_position"] >= s["_position"]:
                break
            if e.get("workItemId") and e.get("toState") and e.get("missionId") == mid:
                state[e["workItemId"]] = e["toState"]
        if any(v not in ("verified", "cancelled", "failed") for v in state.values()):
            bad.append(mid)
    n = len(ev.of("mission.submitted_for_approval"))
    return verdict(
        n > 0 and not bad, f"{n} submissions, all after verification", f"submitted early: {bad}"
    )


@check(
    "exact_signed_human_approvals",
    "each human Approval is signed and names the exact submitted revision and Artifact set",
    S,
)
def exact_signed_human_approvals(ev: Evidence) -> Verdict:

    ok_n, bad = 0, []
    for a in ev.of("mission.approved"):
        if a["actor"]["type"] != "human":
            continue
        approval = a["payload"]["approval"]
        sub = [
            s
            for s in ev.of("mission.submitted_for_approval")
            if s["payload"]["missionId"] == approval["missionId"]
            and s["_position"] < a["_position"]
        ][-1]
        exact = approval["missionRevision"] == sub["payload"]["missionRevision"] and sorted(
            approval["artifactHashes"]
        ) == sorted(sub["payload"]["artifactHashes"])
        cmd = ev.command(a)
        if (
            exact
            and cmd is not None
            and signature_ok(ev, cmd)
            and signature_ok(ev, approval, "approval")
        ):
            ok_n += 1
        else:
            bad.append(approval["missionId"])
    return verdict(
        ok_n >= 2 and not bad, f"{ok_n} exact, signed human Approvals", f"bad: {bad}, good {ok_n}"
    )


@check(
    "one_change_request_cycle",
    "one human change request led to corrective work, a new submission and Approval",
    S,
)
def one_change_request_cycle(ev: Evidence) -> Verdict:
    crs = ev.of("mission.changes_requested")
    if len(crs) != 1:
        return False, f"{len(crs)} change requests"
    cr = crs[0]
    mid = cr["payload"]["missionId"]
    later = [e for e in ev.events if e["_position"] > cr["_position"] and e["_mission"] == mid]
    kinds = [e["kind"] for e in later]
    ok = (
        "work.authorized" in kinds
        and "mission.submitted_for_approval" in kinds
        and "mission.approved" in kinds
    )
    return verdict(
        ok,
        f"{mid}: change request → corrective work → resubmission → Approval",
        f"after the request: {sorted(set(kinds))}",
    )


@check("signed_change_request", "the change request is a signed human Command", S)
def signed_change_request(ev: Evidence) -> Verdict:

    crs = ev.of("mission.changes_requested")
    good = [
        c
        for c in crs
        if (cmd := ev.command(c)) is not None
        and cmd["actor"]["type"] == "human"
        and signature_ok(ev, cmd)
    ]
    return verdict(
        bool(crs) and len(good) == len(crs),
        f"{len(good)} signed human change request(s)",
        "no signed human change request",
    )


@check(
    "artifact_provenance",
    "every Artifact is produced for a WorkItem of a Mission (provenance graph)",
    S,
)
def artifact_provenance(ev: Evidence) -> Verdict:
    rows = ev.sql(
        "SELECT p.from_id AS artifact, w.to_id AS mission FROM artifact_edges p "
        "LEFT JOIN artifact_edges w ON w.edge = 'part_of' AND w.from_id = p.to_id "
        "WHERE p.edge = 'produced_for'"
    )
    orphans = [r["artifact"] for r in rows if r["mission"] is None]
    return verdict(
        bool(rows) and not orphans,
        f"{len(rows)} Artifacts, each traced to a Mission",
        f"orphans: {orphans[:3]}",
    )


@check("worker_proposal_non_authoritative", "a Worker's proposal created no WorkItem by itself", S)
def worker_proposal_non_authoritative(ev: Evidence) -> Verdict:
    props = ev.of("work.proposed")
    for p in props:
        cmd = ev.command(p)
        receipt_events = [e for e in ev.events if e.get("cause", {}).get("id") == p["cause"]["id"]]
        if (
            cmd
            and cmd["actor"]["id"] not in ev.coordinators
            and all(e["kind"] == "work.proposed" for e in receipt_events)
        ):
            return (
                True,
                f"proposal {p['payload']['proposalId']} by {cmd['actor']['id']}: "
                "only work.proposed",
            )
    return False, f"{len(props)} proposals, none shown non-authoritative"


@check(
    "coordinator_authorized_sub_work",
    "the Coordinator authorized a Worker's proposed sub-work, which was then verified",
    S,
)
def coordinator_authorized_sub_work(ev: Evidence) -> Verdict:
    states = {
        r["work_item_id"]: r["state"] for r in ev.sql("SELECT work_item_id, state FROM work_items")
    }
    for a in ev.of("work.authorized"):
        authorized = a["payload"].get("proposalId") and a["actor"]["id"] in ev.coordinators
        if authorized and states.get(a["workItemId"]) == "verified":
            return True, f"{a['workItemId']} authorized by {a['actor']['id']} and verified"
    return False, "no authorized proposal was verified"


@check("dynamic_dependency_once", "the new sub-work was inserted as a dependency exactly once", S)
def dynamic_dependency_once(ev: Evidence) -> Verdict:
    new = {a["workItemId"] for a in ev.of("work.authorized") if a["payload"].get("proposalId")}
    inserts: Counter[tuple[str, str]] = Counter()
    for e in ev.of("work.contract.revised"):
        prev = set(e["payload"].get("previousContract", {}).get("dependencyWorkItemIds", []))
        deps = set(e["payload"]["contract"]["dependencyWorkItemIds"])
        for d in (
            (deps - prev) & new if prev or e["payload"].get("previousContract") else deps & new
        ):
            inserts[(e["workItemId"], d)] += 1
    ok = bool(inserts) and all(v == 1 for v in inserts.values())
    return verdict(ok, f"inserted once: {sorted(inserts)}", f"insertions: {dict(inserts)}")


@check(
    "contract_revision_renewed_acceptance",
    "a revised Work Contract was accepted again at its new version",
    S,
)
def contract_revision_renewed_acceptance(ev: Evidence) -> Verdict:
    for r in ev.of("work.contract.revised"):
        version = r["payload"]["contract"].get("version", r["payload"].get("contractVersion"))
        later = [
            e
            for e in ev.work_payloads(r["workItemId"])
            if e["_position"] > r["_position"] and e["kind"] == "work.offer.accepted"
        ]
        if later:
            return True, f"{r['workItemId']}: contract version {version}, accepted again"
    return False, "no revised contract was accepted again"


@check(
    "classified_reusable_knowledge",
    "a verified, classified Artifact was published as Organization knowledge with provenance",
    S,
)
def classified_reusable_knowledge(ev: Evidence) -> Verdict:
    pubs = ev.of("ext.mwp-local.sandbox.knowledge_published")
    good = [
        p
        for p in pubs
        if p["payload"]["classification"] in ("internal", "public")
        and p["payload"].get("provenance")
        and p["actor"]["type"] == "service"
    ]
    return verdict(
        bool(good),
        f"{len(good)} publication(s), classification "
        f"{good[0]['payload']['classification'] if good else ''}",
        "nothing published",
    )


@check("worker_to_worker_conversation", "two Workers exchanged Messages, which changed no state", S)
def worker_to_worker_conversation(ev: Evidence) -> Verdict:
    posts = [
        m
        for m in ev.of("message.posted")
        if m["actor"]["id"] not in ev.coordinators and m["actor"]["type"] == "agent"
    ]
    pairs = {
        (m["actor"]["id"], x["id"], m["groupId"])
        for m in posts
        for x in m["payload"]["message"].get("mentions", [])
        if m["payload"]["message"]["authority"] is False
    }
    replies = sorted((a, b, g) for a, b, g in pairs if (b, a, g) in pairs and a < b)
    only_messages = all(
        all(e["kind"] == "message.posted" for e in ev.events if e.get("cause") == m.get("cause"))
        for m in posts
    )
    ok = bool(replies) and only_messages
    return verdict(
        ok,
        f"{replies[0][0]} ⇄ {replies[0][1]} in {replies[0][2]}" if replies else "",
        f"Worker Messages: {len(posts)}, exchanges: {replies}",
    )
