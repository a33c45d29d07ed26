"""Checks on delivery, replay and isolation: duplicate and out-of-order Events, disconnects,
``CURSOR_TOO_OLD`` with signed Group Snapshots, Cursors, bounded offline execution, Context
Packages, context and credential isolation, scheduling disclosure, idempotent external effects.

They read the frames each session received, the snapshots the bus served, the offline buffers
and each agent's final replica (``DIR/poc/``), always against the Group log.
"""

from __future__ import annotations

import bisect
import itertools

from ..protocol.errors import ProtocolError
from ..protocol.hashing import sha256_id
from ..protocol.inbox import Inbox
from ..protocol.jcs import canonicalize
from .evidence import Evidence, signature_ok
from .registry import Verdict, check, verdict

S = "delivery"
CONTEXT_PACKAGE_SCHEMA = "urn:mwp-local:schema:context-package"


@check(
    "duplicate_event_ignored",
    "Events delivered twice to an agent were folded once (its replica equals the log)",
    S,
)
def duplicate_event_ignored(ev: Evidence) -> Verdict:
    seen: dict[tuple[str, int, str], int] = {}
    for f in ev.event_frames:
        key = (f["agent"], f["incarnation"], f["eventId"])
        seen[key] = seen.get(key, 0) + 1
    dup_agents = {a for (a, _, _), n in seen.items() if n >= 2}
    final = {
        r["work_item_id"]: (r["state"], r["revision"])
        for r in ev.sql("SELECT work_item_id, state, revision FROM work_items")
    }
    wrong = [
        r["agent"]
        for r in ev.side["replicas"]
        if r["agent"] in dup_agents
        and any(final.get(w) != (v["state"], v["revision"]) for w, v in r["workItems"].items())
    ]
    ok = bool(dup_agents) and not wrong
    return verdict(
        ok,
        f"{sum(1 for n in seen.values() if n >= 2)} duplicate deliveries to "
        f"{len(dup_agents)} agents; replicas equal the log",
        f"duplicated to {len(dup_agents)}; replicas differ: {wrong}",
    )


@check(
    "gap_buffering", "Events arriving after a gap were buffered and released in sequence order", S
)
def gap_buffering(ev: Evidence) -> Verdict:
    inboxes: dict[tuple[str, int], Inbox] = {}
    buffered, misordered = 0, 0
    for f in ev.event_frames:
        inbox = inboxes.setdefault((f["agent"], f["incarnation"]), Inbox())
        cursor = inbox.cursors.get(f["groupId"], 0)
        if f["sequence"] > cursor + 1:
            buffered += 1
        released = inbox.offer(
            {"eventId": f["eventId"], "groupId": f["groupId"], "sequence": f["sequence"]}
        )
        seqs = [int(e["sequence"]) for e in released]
        if seqs != list(range(cursor + 1, cursor + 1 + len(seqs))):
            misordered += 1
    return verdict(
        buffered > 0 and misordered == 0,
        f"{buffered} Events arrived ahead of a gap; all released in order",
        f"ahead of a gap {buffered}, out of order {misordered}",
    )


@check(
    "cursors_reach_heads",
    "every agent's Cursor reached the head of each Group it is a member of, contiguously, and "
    "no Cursor stands in a Group it is not",
    S,
)
def cursors_reach_heads(ev: Evidence) -> Verdict:
    replicas = ev.side["replicas"]
    behind = [
        (r["agent"], g)
        for r in replicas
        for g, head in ev.heads_of(r["agent"]).items()
        if r["cursors"].get(g, 0) != head or r["gaps"].get(g)
    ]
    foreign = [
        (r["agent"], g)
        for r in replicas
        for g, c in r["cursors"].items()
        if c and g in ev.heads and g not in ev.heads_of(r["agent"])
    ]
    return verdict(
        bool(replicas) and not behind and not foreign,
        f"{len(replicas)} agents at the head of each of their Groups ({len(ev.heads)} Groups)",
        f"behind: {behind[:4]}; in Groups they are not members of: {foreign[:4]}",
    )


@check(
    "received_only_member_groups",
    "no agent received an Event of a Group it was never granted a Membership in, from before "
    "its Membership's visibility start, or after its Membership ended (§8, §17.2)",
    S,
)
def received_only_member_groups(ev: Evidence) -> Verdict:
    leaks = [
        (f["agent"], f["groupId"], f["sequence"])
        for f in ev.event_frames
        if f["groupId"] and not ev.visible(f["agent"], f["groupId"], f["sequence"])
    ]
    agents = {f["agent"] for f in ev.event_frames}
    late = {k for k, spans in ev.visible_spans.items() if spans[0][0] > 1}
    return verdict(
        bool(ev.event_frames) and bool(late) and not leaks,
        f"{len(ev.event_frames)} Event frames to {len(agents)} agents, each of a Group of theirs "
        f"from their visibility start ({len(late)} Memberships started late)",
        f"{len(leaks)} frame(s) of Groups not theirs or from before their start, e.g. {leaks[:3]}",
    )


@check(
    "late_joiners_start_from_their_package",
    "an agent whose visibility starts late learned what lies before it only from the Context "
    "Packages addressed to it, fetched through the gate (§8, §13.3; MWP-WRK-027)",
    S,
)
def late_joiners_start_from_their_package(ev: Evidence) -> Verdict:
    # What a replica knows of a WorkItem from before its start must come from a package: each
    # WorkItem it holds was authorized inside its spans, or is cited by a package to it.
    authorized = {e["payload"]["workItem"]["workItemId"]: e for e in ev.of("work.authorized")}
    unexplained = []
    seeded = 0
    for replica in ev.side["replicas"]:
        agent = replica["agent"]
        cited = ev.packages_for.get(agent, set())
        seeded += sum(n for _, n in replica.get("seeded", ()))
        for wid in replica["workItems"]:
            e = authorized.get(wid)
            if e is None:
                continue
            if (
                not ev.visible(agent, e["groupId"], int(e["sequence"]))
                and e["eventId"] not in cited
            ):
                unexplained.append((agent, wid))
    return verdict(
        seeded > 0 and not unexplained,
        f"{seeded} cited Events fetched through the gate seeded late joiners; every WorkItem a "
        "replica holds from before its start is cited by a package addressed to it",
        f"seeded {seeded}; WorkItems known without a package: {unexplained[:4]}",
    )


@check(
    "disconnect_reconnect_reconciled",
    "an agent cut off for a while caught up after reconnecting",
    S,
)
def disconnect_reconnect_reconciled(ev: Evidence) -> Verdict:
    by_agent: dict[str, list[int]] = {}
    for f in ev.event_frames:
        by_agent.setdefault(f["agent"], []).append(f["atUs"])
    published = sorted({f["atUs"] for f in ev.event_frames})
    heads_ok = {
        r["agent"]
        for r in ev.side["replicas"]
        if all(r["cursors"].get(g, 0) == h for g, h in ev.heads_of(r["agent"]).items())
    }
    for agent, times in sorted(by_agent.items()):
        times.sort()
        for a, b in itertools.pairwise(times):
            # ``published`` is sorted without repeats: these are the times strictly between.
            others = bisect.bisect_left(published, b) - bisect.bisect_right(published, a)
            if b - a >= 10 * 60 * 1_000_000 and others >= 5 and agent in heads_ok:
                return (
                    True,
                    f"{agent}: silent for {(b - a) / 6e7:.0f} min while {others} "
                    "rounds went to others; at the heads now",
                )
    return False, "no agent was cut off and caught up"


@check(
    "cursor_too_old_snapshot_restore",
    "CURSOR_TOO_OLD named a signed snapshot, which verified and restored the agent",
    S,
)
def cursor_too_old_snapshot_restore(ev: Evidence) -> Verdict:
    errors = [
        f
        for f in ev.side["frames"]
        if f["frameType"] == "ERROR" and f["error"]["code"] == "CURSOR_TOO_OLD"
    ]
    bundles = ev.snapshot_bundles
    at_head = {
        r["agent"]
        for r in ev.side["replicas"]
        if all(r["cursors"].get(g, 0) == h for g, h in ev.heads_of(r["agent"]).items())
    }
    for f in errors:
        ref = f["error"]["details"]["snapshot"]
        if ref["snapshotId"] not in bundles:
            continue
        try:
            events = ev.verified_snapshot(ref["snapshotId"], ref)
        except ProtocolError as exc:
            return False, f"snapshot {ref['snapshotId']} refused: {exc.code.value}"
        if f["agent"] in at_head:
            return (
                True,
                f"{f['agent']}: restored {len(events)} Events through "
                f"{ref['throughSequence']}, now at the head",
            )
    return False, f"{len(errors)} CURSOR_TOO_OLD error(s), none restored"


@check(
    "signed_archival_snapshots",
    "every Group Snapshot is signed by the Group Authority and its body matches stateHash",
    S,
)
def signed_archival_snapshots(ev: Evidence) -> Verdict:
    bundles = ev.snapshot_bundles
    bad = []
    for sid, b in bundles.items():
        ref = {"snapshotId": sid, "snapshotHash": sha256_id(canonicalize(b.snapshot))}
        try:
            ev.verified_snapshot(sid, ref)
        except ProtocolError as exc:
            bad.append((sid, exc.code.value))
    return verdict(
        bool(bundles) and not bad,
        f"{len(bundles)} snapshots verify",
        f"{len(bundles)} snapshots, bad {bad}",
    )


@check(
    "snapshots_cover_full_histories",
    "each snapshot holds its Group's Events from sequence 1 (or, for a late joiner, from its "
    "visibility start), exactly as logged",
    S,
)
def snapshots_cover_full_histories(ev: Evidence) -> Verdict:
    logged: dict[str, list[str]] = {}
    for e in ev.events:
        if e.get("groupId"):
            logged.setdefault(e["groupId"], []).append(e["eventId"])
    starts: dict[str, set[int]] = {}
    for (_, group), spans in ev.visible_spans.items():
        starts.setdefault(group, {1}).update(a for a, _ in spans)
    bad = []
    for s in ev.side["snapshots"]:
        snap = s["snapshot"]
        group, through = snap["groupId"], snap["throughSequence"]
        first = through - len(snap["eventIds"]) + 1
        expected = logged.get(group, [])[first - 1 : through]
        if (
            first not in starts.get(group, {1})
            or snap["eventIds"] != expected
            or len(expected) != through - first + 1
        ):
            bad.append(s["snapshotId"])
    n = len(ev.side["snapshots"])
    return verdict(
        n > 0 and not bad,
        f"{n} snapshots, each from 1 (or a visibility start) through its sequence as logged",
        f"{n} snapshots, mismatched {bad}",
    )


@check(
    "context_package_in_its_group",
    "every Context Package cites only Events of the Group it was posted in",
    S,
)
def context_package_in_its_group(ev: Evidence) -> Verdict:
    group_of = {e["eventId"]: e.get("groupId") for e in ev.events}
    n, bad = 0, []
    for m in ev.of("message.posted"):
        for part in m["payload"]["message"]["content"]:
            if part.get("type") == "data_ref" and part.get("schema") == CONTEXT_PACKAGE_SCHEMA:
                n += 1
                pkg = part["data"]
                cited = {i for d in pkg.get("decisions", []) for i in d.get("sourceEventIds", [])}
                if pkg["groupId"] != m["groupId"] or any(
                    group_of.get(i) != m["groupId"] for i in cited
                ):
                    bad.append(pkg["contextPackageId"])
    return verdict(
        n > 0 and not bad,
        f"{n} packages, all within their Groups",
        f"{n} packages, crossing: {bad}",
    )


@check(
    "signed_context_package_late_reviewer",
    "a signed Context Package was given to a reviewer who then reviewed in that Group",
    S,
)
def signed_context_package_late_reviewer(ev: Evidence) -> Verdict:

    for m in ev.of("message.posted"):
        mentions = {x["id"] for x in m["payload"]["message"].get("mentions", [])}
        for part in m["payload"]["message"]["content"]:
            if part.get("schema") != CONTEXT_PACKAGE_SCHEMA or not mentions:
                continue
            if not signature_ok(ev, part["data"], "context-package"):
                continue
            later = [
                e
                for e in ev.of("work.started")
                if e["_position"] > m["_position"]
                and e["actor"]["id"] in mentions
                and e["groupId"] == m["groupId"]
            ]
            if later:
                return (
                    True,
                    f"package {part['data']['contextPackageId']} → {sorted(mentions)}, "
                    f"who started {later[0]['workItemId']}",
                )
    return False, "no signed package reached a later reviewer"


@check("per_group_context_isolation", "no Worker Command names another Group's WorkItems", S)
def per_group_context_isolation(ev: Evidence) -> Verdict:
    group_of = {e["workItemId"]: e["groupId"] for e in ev.of("work.authorized")}
    leaks = []
    for cmd in ev.commands:
        if cmd["actor"]["type"] != "agent" or cmd["actor"]["id"] in ev.coordinators:
            continue
        text = canonicalize(cmd["payload"]).decode()
        for wid, g in group_of.items():
            if g != cmd.get("groupId") and f'"{wid}"' in text:
                leaks.append((cmd["kind"], wid))
    return verdict(
        not leaks,
        f"{len(ev.commands)} Commands checked, no cross-Group reference",
        f"leaks: {leaks[:3]}",
    )


@check(
    "credential_isolation",
    "every external call was made by the WorkItem's owner with its own token; others were refused",
    S,
)
def credential_isolation(ev: Evidence) -> Verdict:
    calls = ev.view.external_calls or ()
    owners = {w: {a for _, a in o} for w, o in ev.owners.items()}
    bad = [
        c
        for c in calls
        if c["outcome"] == "performed" and c["agent_id"] not in owners.get(c["work_item_id"], set())
    ]
    return verdict(
        bool(calls) and not bad,
        f"{len(calls)} external calls, each by an owner of its WorkItem",
        f"{len(calls)} calls, by non-owners {len(bad)}",
    )


@check(
    "idempotent_external_effects",
    "no external effect was performed twice for one idempotency key",
    S,
)
def idempotent_external_effects(ev: Evidence) -> Verdict:
    calls = ev.view.external_calls or ()
    performed: dict[str, int] = {}
    for c in calls:
        if c["outcome"] == "performed" and c["ok"]:
            performed[c["idempotency_key"]] = performed.get(c["idempotency_key"], 0) + 1
    twice = [k for k, n in performed.items() if n > 1]
    return verdict(
        bool(performed) and not twice, f"{len(performed)} effects, each once", f"twice: {twice[:2]}"
    )


@check(
    "scheduling_disclosure_without_leakage",
    "Workers disclose schedule estimates with offers, naming no other Group's work",
    S,
)
def scheduling_disclosure_without_leakage(ev: Evidence) -> Verdict:
    estimates = [
        c
        for c in ev.commands
        if c["kind"] == "work.accept_offer" and "scheduleEstimate" in c["payload"]
    ]
    text = [canonicalize(c["payload"]["scheduleEstimate"]).decode() for c in estimates]
    ids = [e["workItemId"] for e in ev.of("work.authorized")] + list(ev.heads)
    leaks = [t for t in text if any(i in t for i in ids)]
    return verdict(
        bool(estimates) and not leaks,
        f"{len(estimates)} estimates, none naming work or Groups",
        f"{len(estimates)} estimates, {len(leaks)} leak",
    )
