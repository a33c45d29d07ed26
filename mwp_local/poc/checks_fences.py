"""Checks on the Group Authority's fences: signatures, Action IDs, idempotency, epochs, leases,
offers, restarts and Coordinator replacement, read from receipts, rejections and Events."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..campaign.checker import check_view
from .evidence import Evidence, micros, signature_ok
from .registry import Verdict, check, verdict

S = "fences"


def _probe_rejected(ev: Evidence, name: str, *codes: str) -> Verdict:
    probes = ev.probes(name)
    if not probes:
        return False, f"no {name} probe was submitted"
    outcomes = [ev.probe_outcome(p) for p in probes]
    ok = all(o == "rejected" and c in codes for o, c in outcomes)
    return verdict(
        ok,
        f"{len(probes)} refused with {sorted({c or '' for _, c in outcomes})}",
        f"outcomes: {outcomes}",
    )


@check(
    "action_id_collision",
    "an Action ID reused for other content was refused (ACTION_ID_COLLISION)",
    S,
)
def action_id_collision(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:action_id_collision", "ACTION_ID_COLLISION")


@check(
    "forged_signature_rejected", "forged signatures (altered, another Agent's key) were refused", S
)
def forged_signature_rejected(ev: Evidence) -> Verdict:
    a = _probe_rejected(ev, "forged:bad_signature", "AUTH_INVALID_SIGNATURE")
    b = _probe_rejected(ev, "forged:wrong_key", "AUTH_INVALID_SIGNATURE")
    return a[0] and b[0], f"{a[1]}; {b[1]}"


@check("stale_issued_at_rejected", "a Command outside the freshness window was refused", S)
def stale_issued_at_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_issued_at", "AUTH_INVALID_SIGNATURE")


@check("stale_session_rejected", "a stale Session Epoch was refused", S)
def stale_session_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_session", "AUTH_STALE_SESSION")


@check("stale_membership_rejected", "a stale Membership Epoch was refused", S)
def stale_membership_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_membership", "MEMBERSHIP_STALE")


@check("stale_coordinator_rejected", "a stale Coordinator Epoch was refused", S)
def stale_coordinator_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_coordinator", "AUTH_STALE_COORDINATOR")


@check("stale_ownership_rejected", "a stale Ownership Epoch was refused", S)
def stale_ownership_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_ownership", "WORK_STALE_OWNERSHIP")


@check("stale_lease_rejected", "a superseded Execution Lease was refused", S)
def stale_lease_rejected(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "forged:stale_lease", "WORK_LEASE_EXPIRED")


@check(
    "duplicate_command_idempotent", "an unchanged retry of an accepted Command changed nothing", S
)
def duplicate_command_idempotent(ev: Evidence) -> Verdict:
    probes = ev.probes("duplicate_command")
    if not probes:
        return False, "no duplicate Command was submitted"
    p = probes[0]
    receipts = [
        r for r in ev.view.receipts if (r.actor_id, r.action_id) == (p["actor"], p["actionId"])
    ]
    same = bool(receipts) and receipts[0].command_document == p["command"]
    caused = [
        e
        for e in ev.events
        if e.get("cause", {}).get("id") == p["actionId"] and e["actor"]["id"] == p["actor"]
    ]
    refused = [r for r in ev.rejections if r["action_id"] == p["actionId"]]
    ok = same and len(receipts) == 1 and not refused and len(caused) == len(receipts[0].event_ids)
    return verdict(
        ok,
        f"one receipt, {len(caused)} Event(s), no rejection",
        f"receipts {len(receipts)}, rejections {len(refused)}",
    )


@check(
    "rejections_change_nothing", "no refused Command appears in the receipts or caused an Event", S
)
def rejections_change_nothing(ev: Evidence) -> Verdict:
    accepted = {(r.actor_id, r.action_id): r.command_document for r in ev.view.receipts}
    leaked = [
        r
        for r in ev.rejections
        if accepted.get((r["actor_id"], r["action_id"])) == r["command_text"]
    ]
    return verdict(
        bool(ev.rejections) and not leaked,
        f"{len(ev.rejections)} rejections, none applied",
        f"applied: {leaked[:2]}",
    )


@check(
    "previous_coordinator_rejected",
    "the replaced Coordinator's Command under its old epoch was refused",
    S,
)
def previous_coordinator_rejected(ev: Evidence) -> Verdict:
    olds = {
        e["payload"]["previousCoordinatorAgentId"] for e in ev.of("mission.coordinator.assigned")
    }
    probed = {p["actionId"] for p in ev.side["probes"]}
    natural = [
        r
        for r in ev.rejected("AUTH_STALE_COORDINATOR")
        if r["actor_id"] in olds and r["action_id"] not in probed
    ]
    return verdict(
        bool(natural),
        f"{natural[0]['actor_id']}: {natural[0]['kind']} refused" if natural else "",
        "no stale Command from a replaced Coordinator",
    )


@check("coordinator_replaced", "a Coordinator whose lease lapsed was replaced by another Agent", S)
def coordinator_replaced(ev: Evidence) -> Verdict:
    for a in ev.of("mission.coordinator.assigned"):
        p = a["payload"]
        old = p["previousCoordinatorAgentId"]
        if p["coordinator"]["agentId"] == old:
            continue
        lapsed = ev.sql(
            "SELECT expires_at FROM leases WHERE lease_type = 'coordinator' "
            "AND holder_agent_id = $old AND expires_at <= CAST($at AS TIMESTAMPTZ)",
            {"old": old, "at": a["occurredAt"]},
        )
        if lapsed:
            return True, f"{old} → {p['coordinator']['agentId']} after its lease lapsed"
        return False, f"{old} was replaced while its lease was live"
    return False, "no Coordinator replacement"


@check(
    "signed_coordinator_replacement",
    "the replacement is a signed MissionOwner Command with a higher Coordinator Epoch",
    S,
)
def signed_coordinator_replacement(ev: Evidence) -> Verdict:
    for a in ev.of("mission.coordinator.assigned"):
        cmd = ev.command(a)
        p = a["payload"]
        if (
            cmd
            and cmd["actor"]["type"] == "human"
            and signature_ok(ev, cmd)
            and p["coordinator"]["coordinatorEpoch"] > p["previousCoordinatorEpoch"]
        ):
            return (
                True,
                f"epoch {p['previousCoordinatorEpoch']} → "
                f"{p['coordinator']['coordinatorEpoch']}, signed by {cmd['actor']['id']}",
            )
    return False, "no signed replacement with a higher epoch"


@check("ownership_epoch_advanced", "a reassigned WorkItem got a higher Ownership Epoch", S)
def ownership_epoch_advanced(ev: Evidence) -> Verdict:
    for wid, owners in ev.owners.items():
        if len({a for _, a in owners}) >= 2:
            epochs = [
                e["payload"].get("ownershipEpoch")
                for e in ev.work_payloads(wid)
                if e["kind"] == "work.offer.accepted"
            ]
            rows = ev.sql(
                "SELECT ownership_epoch FROM work_items WHERE work_item_id = $w", {"w": wid}
            )
            if rows and rows[0]["ownership_epoch"] and rows[0]["ownership_epoch"] >= 2:
                return (
                    True,
                    f"{wid}: owners {[a for _, a in owners]}, "
                    f"epoch {rows[0]['ownership_epoch']} {epochs}",
                )
    return False, "no WorkItem changed owner under a higher epoch"


@check(
    "lease_expiry_reassigned",
    "an Execution Lease expired and its WorkItem was reassigned and verified",
    S,
)
def lease_expiry_reassigned(ev: Evidence) -> Verdict:
    for x in ev.of("ext.mwp-local.sandbox.lease_expired"):
        wid = x.get("workItemId")
        if not wid:
            continue
        before = ev.owner_at(wid, x["_position"])
        later = [a for at, a in ev.owners.get(wid, []) if at > x["_position"]]
        state = ev.sql("SELECT state FROM work_items WHERE work_item_id = $w", {"w": wid})
        if later and later[-1] != before and state and state[0]["state"] == "verified":
            return True, f"{wid}: {before} expired, {later[-1]} finished it"
    return False, "no expired lease led to a reassignment"


@check("lease_expiry_rejected", "the expired owner's late Command was refused", S)
def lease_expiry_rejected(ev: Evidence) -> Verdict:
    # After the run the reassigned WorkItem is verified: the table refuses the late submission
    # before any fence (INVALID_STATE_TRANSITION); while it runs, its Ownership Epoch does.
    return _probe_rejected(
        ev, "late_result", "WORK_STALE_OWNERSHIP", "WORK_LEASE_EXPIRED", "INVALID_STATE_TRANSITION"
    )


@check(
    "late_result_kept_not_completing",
    "the late result is kept for audit (rejections) and never completed the WorkItem",
    S,
)
def late_result_kept_not_completing(ev: Evidence) -> Verdict:
    probes = ev.probes("late_result")
    if not probes:
        return False, "no late result was submitted"
    p = probes[0]
    kept = [
        r
        for r in ev.rejections
        if r["action_id"] == p["actionId"] and r["command_text"] == p["command"]
    ]
    wid = kept[0]["work_item_id"] if kept else None
    completions = [
        e
        for e in ev.of("work.result.accepted", "work.submitted")
        if e.get("workItemId") == wid and e["actor"]["id"] == p["actor"]
    ]
    return verdict(
        bool(kept) and not completions,
        f"{wid}: kept with code {kept[0]['code'] if kept else ''}, no completion by {p['actor']}",
        "not kept, or it completed",
    )


@check(
    "work_already_owned",
    "a late acceptance after losing the race was refused (WORK_ALREADY_OWNED)",
    S,
)
def work_already_owned(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "lost_race_accept", "WORK_ALREADY_OWNED")


@check("work_offer_expired", "accepting an expired offer was refused (WORK_OFFER_EXPIRED)", S)
def work_offer_expired(ev: Evidence) -> Verdict:
    return _probe_rejected(ev, "expired_offer_accept", "WORK_OFFER_EXPIRED")


@check(
    "restart_fences_old_session",
    "the restarted Worker's new Session revoked its old leases and fenced the old Session",
    S,
)
def restart_fences_old_session(ev: Evidence) -> Verdict:
    restarts = ev.side["restart"]
    if not restarts:
        return False, "no restart recorded"
    agent = restarts[0]["agent"]
    opened = [
        e
        for e in ev.of("ext.missionweaveprotocol.identity.session_opened")
        if e["payload"]["agentId"] == agent and e["payload"]["sessionEpoch"] >= 2
    ]
    revoked = [
        e
        for e in ev.of("ext.missionweaveprotocol.core.work_execution_lease_revoked")
        if opened and e["_position"] > opened[0]["_position"] - 1
    ]
    fenced = _probe_rejected(ev, "old_session_after_restart", "AUTH_STALE_SESSION")
    ok = bool(opened) and bool(revoked) and fenced[0]
    return verdict(
        ok,
        f"Session Epoch {opened[0]['payload']['sessionEpoch'] if opened else '?'}, "
        f"{len(revoked)} lease(s) revoked; {fenced[1]}",
        f"opened {len(opened)}, revoked {len(revoked)}; {fenced[1]}",
    )


@check(
    "queues_rebuilt_from_replay",
    "the restarted Worker's rebuilt queues equal those a replay of the log derives",
    S,
)
def queues_rebuilt_from_replay(ev: Evidence) -> Verdict:
    from ..authority.evolve import evolve
    from ..authority.state import AuthorityState
    from ..store.agent_store import work_queues

    restarts = ev.side["restart"]
    if not restarts:
        return False, "no restart recorded"
    r = restarts[0]
    opened = [
        e
        for e in ev.of("ext.missionweaveprotocol.identity.session_opened")
        if e["payload"]["agentId"] == r["agent"]
        and e["payload"]["sessionEpoch"] == r["sessionEpoch"]
    ]
    if not opened:
        return False, "no Session opened at the restart"
    org = ev.view.org
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    for e in ev.view.events:
        if e.position >= opened[0]["_position"]:
            break
        evolve(state, e.doc)
    derived = {
        g: [dataclasses.asdict(row) for row in rows]
        for g, rows in sorted(work_queues(state, r["agent"]).items())
    }
    derived = json.loads(json.dumps(derived))  # the record's JSON form
    ok = bool(r["queuesRebuilt"]) and derived == r["queuesRebuilt"]
    return verdict(
        ok,
        f"{sum(len(v) for v in derived.values())} queued item(s) in {len(derived)} Group(s) match",
        f"rebuilt {r['queuesRebuilt']} vs replay {derived}",
    )


@check(
    "log_verifies",
    "every signature (Events, Commands, Artifact manifests), every Artifact blob, the hash "
    "chain, sequences and projections verify (verify-log)",
    S,
    replays=True,
)
def log_verifies(ev: Evidence) -> Verdict:
    result = ev.view.verification()
    return verdict(
        result.ok, "verify-log: ok", f"verify-log: {getattr(result, 'problems', result)}"
    )


@check(
    "log_invariants_hold",
    "the fault campaign's invariants hold (no duplicate side effect, no stale acceptance); its "
    "signature invariant is log_verifies, so not checked twice",
    S,
)
def log_invariants_hold(ev: Evidence) -> Verdict:
    report = check_view(ev.view, skip=("signatures",))
    return verdict(
        report.ok, f"{len(report.tallies)} invariants hold", "; ".join(report.problems()[:3])
    )


# --------------------------------------------------------------------------- client refusals


def _states_at(ev: Evidence, work_item_id: str, at_us: int) -> set[str]:
    """The states the log shows ``work_item_id`` in at ``at_us``: the one the Events before it
    left, and each one an Event at that very microsecond moved it to."""
    before: str | None = None
    same: set[str] = set()
    for e in ev.work_payloads(work_item_id):
        if e.get("toState") is None:
            continue
        t = micros(e["occurredAt"])
        if t < at_us:
            before = e["toState"]
        elif t == at_us:
            same.add(e["toState"])
    return same | ({before} if before is not None else set())


def _refused_unchanged(ev: Evidence, name: str, *codes: str) -> tuple[bool, str]:
    """Was each probe ``name`` refused with one of ``codes`` and changed nothing (no receipt
    and no Event caused under its Action ID)? With what it found, in a few words."""
    probes = ev.probes(name)
    if not probes:
        return False, f"no {name} probe was submitted"
    found = []
    ok = True
    for p in probes:
        outcome, code = ev.probe_outcome(p)
        caused = [e for e in ev.events if e.get("cause", {}).get("id") == p["actionId"]]
        received = (p["actor"], p["actionId"]) in ev.view.commands
        ok = ok and outcome == "rejected" and code in codes and not caused and not received
        found.append(f"{code or outcome}" + (f", {len(caused)} Event(s)" if caused else ""))
    return ok, f"{name.split(':', 1)[-1]} → {', '.join(found)}"


def _payload_of(probe: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(probe["command"])["payload"]
    return payload


@check(
    "accept_without_review_refused",
    "a hand-written work.accept_result with no review of a submitted WorkItem was refused "
    "(§13.2, INVALID_COMMAND) and changed nothing",
    S,
)
def accept_without_review_refused(ev: Evidence) -> Verdict:
    name = "refused:accept_result_no_review"
    probes = ev.probes(name)
    if not probes:
        return False, f"no {name} probe was submitted"
    wid = _payload_of(probes[0])["workItemId"]
    states = _states_at(ev, wid, probes[0]["atUs"])
    # The table is checked first: only a submitted WorkItem lets the review rule speak.
    code = "INVALID_COMMAND" if "submitted" in states else "INVALID_STATE_TRANSITION"
    ok, text = _refused_unchanged(ev, name, code)
    verified = [
        e
        for e in ev.work_payloads(wid)
        if e["kind"] == "work.result.accepted" and micros(e["occurredAt"]) >= probes[0]["atUs"]
    ]
    return verdict(
        ok and "submitted" in states,
        f"{text} ({wid} submitted; verified later by a reviewed Command: {bool(verified)})",
        f"{text}; {wid} was {sorted(states)} (wanted {code} from submitted)",
    )


@check(
    "private_disclosures_refused",
    "an offer whose selection basis carries chain-of-thought (§10.3) and an acceptance whose "
    "schedule estimate gives the global queue position (§11.2) were refused and changed nothing",
    S,
)
def private_disclosures_refused(ev: Evidence) -> Verdict:
    results = []
    for name in (
        "refused:selection_basis_chain_of_thought",
        "refused:schedule_estimate_queue_position",
    ):
        ok, text = _refused_unchanged(ev, name, "SCHEMA_VALIDATION_FAILED")
        probes = ev.probes(name)
        if probes:
            p = probes[0]
            offered = "offered" in _states_at(ev, _payload_of(p)["workItemId"], p["atUs"])
            ok = ok and offered
            text += "" if offered else " (the WorkItem was not offered: the table spoke)"
        results.append((ok, text))
    return all(ok for ok, _ in results), "; ".join(t for _, t in results)


@check(
    "table_refuses_before_fences",
    "a work.submit for a queued WorkItem was refused by the table (INVALID_STATE_TRANSITION), "
    "not a lease fence, and changed nothing",
    S,
)
def table_refuses_before_fences(ev: Evidence) -> Verdict:
    name = "refused:submit_queued"
    ok, text = _refused_unchanged(ev, name, "INVALID_STATE_TRANSITION")
    probes = ev.probes(name)
    if not probes:
        return False, text
    p = probes[0]
    queued = "queued" in _states_at(ev, _payload_of(p)["workItemId"], p["atUs"])
    return verdict(ok and queued, f"{text} (queued)", f"{text}; queued at the time: {queued}")


@check(
    "version_and_former_kind_refused",
    "a Command of protocolVersion 0.2 (UNSUPPORTED_VERSION) and one under a former sandbox kind "
    "name (INVALID_COMMAND) were refused and changed nothing",
    S,
)
def version_and_former_kind_refused(ev: Evidence) -> Verdict:
    a = _refused_unchanged(ev, "refused:protocol_version", "UNSUPPORTED_VERSION")
    b = _refused_unchanged(ev, "refused:former_kind", "INVALID_COMMAND")
    sent = [json.loads(p["command"]) for p in ev.probes("refused:protocol_version")]
    former = [json.loads(p["command"]) for p in ev.probes("refused:former_kind")]
    shaped = all(d.get("protocolVersion") == "0.2" for d in sent) and all(
        d["kind"] == FORMER_LEASE_RENEW for d in former
    )
    return a[0] and b[0] and shaped, f"{a[1]}; {b[1]}"


#: The sandbox's lease renewal under the name it had before the reference core's kinds.
FORMER_LEASE_RENEW = "ext.missionweaveprotocol.core.execution_lease_renew"
