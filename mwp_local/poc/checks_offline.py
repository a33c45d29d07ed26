"""Checks on bounded offline execution (§11.5): progress buffered inside the lease-grace window,
rebased and accepted first after the outage, its usage charged, irreversible work stopped.

They read the Commands Workers buffered (``DIR/poc/offline.jsonl``, as signed offline) against
the rebased Commands and Events in the Group log.
"""

from __future__ import annotations

from typing import Any

from ..authority.offline import BOUNDED_OFFLINE, MAX_GRACE_US
from .evidence import Evidence, micros
from .registry import Verdict, check, verdict

S = "offline"


def _buffered(ev: Evidence) -> list[dict[str, Any]]:
    return [o for o in ev.side["offline"] if o["type"] == "buffered"]


def _rebased(ev: Evidence, b: dict[str, Any]) -> dict[str, Any] | None:
    for e in ev.of("work.checkpointed"):
        cmd = ev.command(e)
        ext = (cmd or {}).get("extensions", {}).get(BOUNDED_OFFLINE)
        if ext and ext["data"] == b["binding"]:
            return {"event": e, "command": cmd}
    return None


@check(
    "offline_progress_bounded",
    "offline progress was buffered only inside the lease-grace window",
    S,
)
def offline_progress_bounded(ev: Evidence) -> Verdict:
    items = _buffered(ev)
    bad = []
    for b in items:
        d = b["binding"]
        grace, buffered = micros(d["graceDeadline"]), micros(d["bufferedAt"])
        expiry = micros(
            d.get("leaseExpiresAt", d.get("historicalLeaseExpiresAt", d["graceDeadline"]))
        )
        if not (micros(d["disconnectedAt"]) <= buffered <= grace <= expiry + MAX_GRACE_US):
            bad.append(b["workItemId"])
    return verdict(
        bool(items) and not bad,
        f"{len(items)} buffered, each within its grace deadline",
        f"{len(items)} buffered, out of bounds {bad}",
    )


@check(
    "offline_rebase",
    "each buffered Command was rebased (new Action ID, current time and epochs) and accepted",
    S,
)
def offline_rebase(ev: Evidence) -> Verdict:
    items = _buffered(ev)
    bad = []
    for b in items:
        r = _rebased(ev, b)
        orig = b["original"]
        if (
            r is None
            or r["command"]["actionId"] == orig.get("actionId")
            or micros(r["command"]["issuedAt"]) < b["outageUntilUs"]
        ):
            bad.append(b["workItemId"])
    return verdict(
        bool(items) and not bad,
        f"{len(items)} rebased and accepted",
        f"{len(items)} buffered, not rebased {bad}",
    )


@check(
    "offline_reconciled_before_side_effects",
    "rebased progress was accepted before any other Command after the outage",
    S,
)
def offline_reconciled_before_side_effects(ev: Evidence) -> Verdict:
    items = _buffered(ev)
    if not items:
        return False, "nothing was buffered offline"
    until = max(b["outageUntilUs"] for b in items)
    found = [r for b in items if (r := _rebased(ev, b))]
    rebased = {r["event"]["_position"] for r in found}
    actions = {r["command"]["actionId"] for r in found}
    after = [
        e
        for e in ev.events
        if micros(e["occurredAt"]) >= until and e.get("cause", {}).get("type") == "command"
    ]
    # Every Command-caused Event after the outage, up to the last rebased checkpoint, belongs to
    # a rebased Command (its checkpoint or the usage charged with it).
    ok = bool(rebased) and all(
        e["cause"]["id"] in actions for e in after if e["_position"] <= max(rebased)
    )
    return verdict(
        ok,
        f"{len(rebased)} rebased checkpoint(s) came first after the outage",
        "other Commands came before the rebased progress",
    )


@check(
    "offline_usage_charged",
    "offline usage was charged to the budget with the progress it came with",
    S,
)
def offline_usage_charged(ev: Evidence) -> Verdict:
    items = _buffered(ev)
    charged = 0
    for b in items:
        r = _rebased(ev, b)
        if r is None:
            continue
        same = [
            e
            for e in ev.events
            if e.get("cause", {}).get("id") == r["command"]["actionId"]
            and e["kind"].endswith("resource_usage_recorded")
        ]
        charged += bool(same)
    return verdict(
        bool(items) and charged == len(items),
        f"{charged} offline charge(s) recorded with their progress",
        f"{charged} of {len(items)} charged",
    )


@check(
    "offline_irreversible_refused",
    "work with external side effects was stopped, not continued, offline",
    S,
)
def offline_irreversible_refused(ev: Evidence) -> Verdict:
    stopped = [o for o in ev.side["offline"] if o["type"] == "stopped"]
    risky = {
        i["workItemId"]: i["contract"].get("sideEffectRisk")
        for i in (e["payload"]["workItem"] for e in ev.of("work.authorized"))
    }
    hits = [s for s in stopped if risky.get(s["workItemId"]) not in ("none", "reversible", None)]
    buffered_risky = [
        b for b in _buffered(ev) if risky.get(b["workItemId"]) not in ("none", "reversible", None)
    ]
    return verdict(
        bool(hits) and not buffered_risky,
        f"{len(hits)} irreversible item(s) stopped at the outage",
        f"stopped {len(hits)}, buffered risky {len(buffered_risky)}",
    )
