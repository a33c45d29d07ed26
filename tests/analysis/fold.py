"""An independent fold of a log's signed Event documents into the rows each documented view
should hold, written from the specification and the views' documentation (docs/sql.md), not
from the code that builds the views: plain Python over the parsed documents, one function per
view. The kind names are spelled here on purpose (they are what the documents say).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import duckdb

Row = dict[str, Any]

DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"

#: §10.2: the state a WorkItem is in after each kind of Event that moves it.
_TO_STATE = {
    "work.authorized": "open",
    "work.offer.created": "offered",
    "work.offer.accepted": "queued",
    "approval.execution.granted": "queued",
    "work.started": "active",
    "work.checkpointed": "queued",
    "work.blocked": "blocked",
    "work.submitted": "submitted",
    "work.result.accepted": "verified",
    "work.failed": "failed",
    "work.cancelled": "cancelled",
    "mission.child.created": "blocked",
}
#: §7.1: the Mission state after each lifecycle Event.
_MISSION_STATE = {
    "mission.created": "active",
    "mission.submitted_for_approval": "awaiting_approval",
    "mission.changes_requested": "active",
    "mission.approved": "approved",
    "mission.cancelled": "cancelled",
    "mission.terminated": "failed",
}
_LIMITS = {
    "financial": "financialLimit",
    "modelTokens": "modelTokenLimit",
    "toolCalls": "toolCallLimit",
    "computeSeconds": "computeSecondsLimit",
    "wallClockSeconds": "wallClockSecondsLimit",
    "externalSideEffects": "externalSideEffectLimit",
}


def ts(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (None stays None)."""
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


class Log:
    """The Event documents of one log file, in log order, with the rows of its receipt and
    rejection tables (the two tables hold what no Event says)."""

    def __init__(self, path: str) -> None:
        con = duckdb.connect(path, read_only=True)
        try:
            rows = con.execute("SELECT position, document FROM log_events ORDER BY position")
            self.events = [(p, json.loads(d)) for p, d in rows.fetchall()]
            self.receipts = _dicts(con, "SELECT * FROM log_receipts ORDER BY position")
            self.rejections = _dicts(con, "SELECT * FROM log_rejections ORDER BY position")
        finally:
            con.close()
        self.end = max((ts(e["occurredAt"]) for _, e in self.events), default=None)

    def of(self, *kinds: str) -> Iterable[tuple[int, dict[str, Any]]]:
        return ((p, e) for p, e in self.events if e["kind"] in kinds)


def _dicts(con: duckdb.DuckDBPyConnection, query: str) -> list[Row]:
    result = con.execute(query)
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def work_item_of(payload: Mapping[str, Any]) -> str | None:
    return payload.get("workItemId") or (payload.get("workItem") or {}).get("workItemId")


def to_state(event: Mapping[str, Any]) -> str | None:
    kind, payload = event["kind"], event["payload"]
    if kind == "work.unblocked":
        return str(payload["toState"])
    if (
        kind.endswith(".work_execution_lease_revoked")
        and payload.get("reason") == "session_replaced"
    ):
        return "queued"
    return _TO_STATE.get(kind)


def _from_state(current: Mapping[str, str], wid: str, payload: Mapping[str, Any]) -> str:
    """The state before: the pre-states of §10.2 ("none", or an open Work Proposal) for a new
    WorkItem."""
    if wid in current:
        return current[wid]
    return "open_work_proposal" if payload.get("proposalId") else "none"


def events(log: Log) -> list[Row]:
    out = []
    current: dict[str, str] = {}
    conversations: dict[str, str] = {}  # a WorkItem Conversation → its WorkItem
    for position, e in log.events:
        payload = e["payload"]
        wid = work_item_of(payload)
        if e["kind"] == "work.authorized":
            conversations[payload["workItem"]["conversationId"]] = wid
        if wid is None and "message" in payload:
            wid = conversations.get(payload["message"].get("conversationId"))
        after = to_state(e) if wid else None
        out.append(
            {
                "position": position,
                "group_id": e.get("groupId"),
                "sequence": e.get("sequence"),
                "aggregate_revision": e.get("aggregateRevision"),
                "event_id": e["eventId"],
                "kind": e["kind"],
                "occurred_at": ts(e["occurredAt"]),
                "actor_type": e["actor"]["type"],
                "actor_id": e["actor"]["id"],
                "cause_type": e["cause"]["type"],
                "cause_id": e["cause"]["id"],
                "correlation_id": e["correlationId"],
                "mission_id": payload.get("missionId"),
                "work_item_id": wid,
                "from_state": _from_state(current, wid, payload) if after and wid else None,
                "to_state": after,
                "payload": payload,
                "document": e,
            }
        )
        if after and wid:
            current[wid] = after
    return out


def rejections(log: Log) -> list[Row]:
    keep = [
        "position",
        "code",
        "explanation",
        "actor_id",
        "action_id",
        "kind",
        "group_id",
        "work_item_id",
        "rule",
        "stage",
        "reason",
        "details",
        "command_text",
    ]
    return [
        {**{n: r[n] for n in keep}, "received_at": ts(r["received_at"]), "details": r["details"]}
        for r in log.rejections
    ]


def receipts(log: Log) -> list[Row]:
    keep = [
        "position",
        "actor_id",
        "action_id",
        "kind",
        "group_id",
        "command_hash",
        "event_ids",
        "receipt",
    ]
    return [
        {
            **{n: r[n] for n in keep},
            "accepted_at": ts(r["accepted_at"]),
            "command_document": r["command_document"],
        }
        for r in log.receipts
    ]


def work_item_transitions(log: Log) -> list[Row]:
    keep = [
        "position",
        "group_id",
        "mission_id",
        "sequence",
        "event_id",
        "work_item_id",
        "kind",
        "from_state",
        "to_state",
        "occurred_at",
        "actor_type",
        "actor_id",
    ]
    return [{n: r[n] for n in keep} for r in events(log) if r["to_state"]]


def work_item_states(log: Log) -> list[Row]:
    by_item: dict[str, list[Row]] = {}
    for r in work_item_transitions(log):
        by_item.setdefault(r["work_item_id"], []).append(r)
    out = []
    for stays in by_item.values():
        for here, after in zip(stays, [*stays[1:], None], strict=True):
            out.append(
                {
                    "work_item_id": here["work_item_id"],
                    "mission_id": here["mission_id"],
                    "group_id": here["group_id"],
                    "state": here["to_state"],
                    "entered_at": here["occurred_at"],
                    "left_at": after and after["occurred_at"],
                    "duration": after and after["occurred_at"] - here["occurred_at"],
                    "entered_by": here["kind"],
                    "left_by": after and after["kind"],
                    "entered_position": here["position"],
                    "left_position": after and after["position"],
                }
            )
    return out


def work_items(log: Log) -> list[Row]:
    items: dict[str, Row] = {}
    for r in events(log):
        wid, e, payload = r["work_item_id"], r["document"], r["payload"]
        if r["kind"] == "work.authorized":
            doc = payload["workItem"]
            items[wid] = {
                "work_item_id": wid,
                "mission_id": r["mission_id"],
                "group_id": r["group_id"],
                "state": None,
                "revision": None,
                "exclusive": doc["exclusive"],
                "owner_agent_id": None,
                "ownership_epoch": 0,
                "attempts": 0,
                "created_at": r["occurred_at"],
                "contract": doc["contract"],
                "_lease": None,
            }
        item = items.get(wid) if wid else None
        if item is None:
            continue
        item["revision"] = max(item["revision"] or 0, e.get("aggregateRevision") or 0) or None
        item["updated_at"] = max(item.get("updated_at") or r["occurred_at"], r["occurred_at"])
        item["last_sequence"] = max(item.get("last_sequence") or 0, e["sequence"])
        if r["to_state"]:
            item["state"] = r["to_state"]
        if r["kind"] == "work.contract.revised":
            item["contract"] = payload["contract"]
        elif r["kind"] == "work.offer.accepted":
            item["owner_agent_id"] = payload["owner"]["agentId"]
            item["ownership_epoch"] = payload["owner"]["ownershipEpoch"]
        elif r["kind"] == "work.offer.created" or (
            r["kind"] == "work.unblocked" and payload["toState"] == "open"
        ):
            item["owner_agent_id"] = None
        elif r["kind"] == "work.started":
            item["_lease"] = payload["executionLeaseId"]
            item["attempts"] = payload["attempt"]
    out = []
    for item in items.values():
        contract = item["contract"]
        lease = item.pop("_lease")
        out.append(
            {
                **item,
                "contract_version": contract["contractVersion"],
                "urgency": contract["requestedUrgency"],
                "deadline": ts(contract.get("deadline")),
                "execution_lease_id": lease if item["state"] == "active" else None,
            }
        )
    return out


def offers(log: Log) -> list[Row]:
    made: dict[str, Row] = {}
    settle: dict[str, tuple[int, datetime, str, str, str, Any]] = {}

    def answer(
        offer_id: str, position: int, e: Mapping[str, Any], outcome: str, data: Any = None
    ) -> None:
        if offer_id in made and offer_id not in settle:
            settle[offer_id] = (
                position,
                ts(e["occurredAt"]),
                e["eventId"],
                e["kind"],
                outcome,
                data,
            )  # type: ignore[assignment]

    for r in events(log):
        e, payload, position, kind = r["document"], r["payload"], r["position"], r["kind"]
        if kind == "work.offer.accepted":
            answer(payload["offerId"], position, e, "accepted")
            for lost in payload["lostOfferIds"]:
                answer(lost, position, e, "lost_race")
        elif kind == "message.posted":
            author = payload["message"]["author"]["id"]
            for part in payload["message"]["content"]:
                if part.get("type") == "data_ref" and part.get("schema") == DECLINE_SCHEMA:
                    offer_id = part["data"]["offerId"]
                    if offer_id in made and made[offer_id]["agent_id"] == author:
                        answer(offer_id, position, e, "declined", part["data"])
        if kind == "work.offer.created":
            for gone in payload["withdrawnOfferIds"]:
                answer(gone, position, e, "withdrawn")
        revised = kind == "work.contract.revised" and payload.get("renewedAcceptanceRequired")
        left = r["from_state"] == "offered" and r["to_state"] not in (None, "offered")
        if revised or (left and kind != "work.offer.accepted"):
            for offer in made.values():
                if offer["work_item_id"] == r["work_item_id"]:
                    answer(offer["offer_id"], position, e, "withdrawn")
        if kind == "work.offer.created":
            for o in payload["offers"]:
                made[o["offerId"]] = {
                    "offer_id": o["offerId"],
                    "work_item_id": r["work_item_id"],
                    "mission_id": r["mission_id"],
                    "group_id": r["group_id"],
                    "agent_id": o["agentId"],
                    "contract_version": payload["contractVersion"],
                    "urgent": payload["urgent"],
                    "offered_at": r["occurred_at"],
                    "expires_at": ts(o["expiresAt"]),
                    "offer_event_id": e["eventId"],
                    "sequence": e["sequence"],
                    "position": position,
                }
    out = []
    for offer_id, offer in made.items():
        got = settle.get(offer_id)
        row = {**offer, "decline_reason": None, "decline": None}
        row.update(settled_at=None, settled_by_event_id=None, settled_by_kind=None)
        if got is not None and got[4] == "accepted":
            status = "accepted"
        elif offer["expires_at"] <= (got[1] if got else log.end):
            status = "expired"
        else:
            status = got[4] if got else "pending"
        row["status"] = status
        if status == "expired":
            row["settled_at"] = offer["expires_at"]
        elif got is not None and status != "pending":
            row.update(settled_at=got[1], settled_by_event_id=got[2], settled_by_kind=got[3])
        if status == "declined" and got is not None:
            row.update(decline=got[5], decline_reason=got[5]["reason"])
        out.append(row)
    return out


def leases(log: Log) -> list[Row]:
    latest: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
    for _, e in log.events:
        for doc in e["payload"].get("leases") or ():
            latest[doc["leaseId"]] = (doc, e)
    out = []
    for lease_id, (doc, e) in latest.items():
        issued, closed = ts(doc["issuedAt"]), ts(doc.get("closedAt"))
        out.append(
            {
                "lease_id": lease_id,
                "lease_type": doc["leaseType"],
                "group_id": doc["groupId"],
                "mission_id": doc["missionId"],
                "work_item_id": doc.get("workItemId"),
                "holder_agent_id": doc["holderAgentId"],
                "session_epoch": doc["sessionEpoch"],
                "ownership_epoch": doc.get("ownershipEpoch"),
                "coordinator_epoch": doc.get("coordinatorEpoch"),
                "state": doc["state"],
                "issued_at": issued,
                "expires_at": ts(doc["expiresAt"]),
                "start_by": ts(doc.get("startBy")),
                "renewal_count": doc["renewalCount"],
                "last_renewed_at": ts(doc.get("lastRenewedAt")),
                "closed_at": closed,
                "closure_reason": doc.get("closureReason"),
                "held_for": closed - issued if closed and issued else None,
                "updated_at": ts(e["occurredAt"]),
                "last_event_id": e["eventId"],
                "document": doc,
            }
        )
    return out


def budgets(log: Log) -> list[Row]:
    scopes: list[Row] = []
    for _, e in log.of("mission.created", "work.authorized"):
        p = e["payload"]
        if e["kind"] == "mission.created":
            scope = ("mission", p["missionId"], p["mission"]["budget"])
        else:
            scope = ("work_item", p["workItem"]["workItemId"], p["workItem"]["contract"]["budget"])
        scopes.append(
            {"scope": scope, "mission_id": p.get("missionId"), "group_id": e.get("groupId")}
        )
    used: dict[tuple[str, str], Mapping[str, float]] = {}
    for _, e in log.of("ext.missionweaveprotocol.core.resource_usage_recorded"):
        for line in e["payload"]["ancestry"]:
            used[(line["scope"]["type"], line["scope"]["id"])] = line["cumulative"]
    out = []
    for s in scopes:
        scope_type, scope_id, budget = s["scope"]
        for dim, member in _LIMITS.items():
            limit = budget.get(member)
            spent = float(used.get((scope_type, scope_id), {}).get(dim, 0.0))
            out.append(
                {
                    "scope_type": scope_type,
                    "scope_id": scope_id,
                    "mission_id": s["mission_id"],
                    "group_id": s["group_id"],
                    "dimension": dim,
                    "limit_value": None if limit is None else float(limit),
                    "used_value": spent,
                    "remaining_value": None if limit is None else float(limit) - spent,
                }
            )
    return out


def signing_keys(log: Log) -> list[Row]:
    out: dict[str, Row] = {}
    for _, e in log.of("ext.missionweaveprotocol.registry.agent_card_registered"):
        card = e["payload"]["agentCard"]
        for key in card["publicKeys"]:
            out.setdefault(
                key["keyId"],
                {
                    "key_id": key["keyId"],
                    "principal_type": "agent",
                    "principal_id": card["agentId"],
                    "algorithm": key["algorithm"],
                    "public_key": key["publicKey"],
                    "valid_from": ts(key["validFrom"]),
                    "valid_until": ts(key.get("validUntil")),
                    "revoked_at": ts(key.get("revokedAt")),
                    "registered_at": ts(e["occurredAt"]),
                    "event_id": e["eventId"],
                },
            )
    return list(out.values())


def memberships(log: Log) -> list[Row]:
    out: dict[tuple[str, str], Row] = {}
    for _, e in log.of("membership.changed", "membership.ended"):
        doc = e["payload"]["membership"]
        out[(doc["groupId"], doc["member"]["id"])] = {
            "group_id": doc["groupId"],
            "principal_id": doc["member"]["id"],
            "principal_type": doc["member"]["type"],
            "role": doc["role"],
            "epoch": doc["membershipEpoch"],
            "state": doc["state"],
            "mission_id": e["payload"].get("missionId"),
            "changed_at": ts(e["occurredAt"]),
            "event_id": e["eventId"],
            "document": doc,
        }
    return list(out.values())


def missions(log: Log) -> list[Row]:
    out: dict[str, Row] = {}
    for _, e in log.events:
        p, kind = e["payload"], e["kind"]
        if kind == "mission.created":
            doc = p["mission"]
            parent = doc.get("parent") or {}
            out[p["missionId"]] = {
                "mission_id": p["missionId"],
                "group_id": e["groupId"],
                "objective": doc["objective"],
                "owner_type": doc["missionOwner"]["type"],
                "owner_id": doc["missionOwner"]["id"],
                "coordinator_agent_id": doc["coordinator"]["agentId"],
                "coordinator_epoch": doc["coordinator"]["coordinatorEpoch"],
                "parent_mission_id": parent.get("missionId"),
                "parent_work_item_id": parent.get("workItemId"),
                "deadline": ts(doc["deadline"]),
                "created_at": ts(e["occurredAt"]),
            }
        mission = out.get(p.get("missionId", ""))
        if mission is None:
            continue
        if kind == "mission.coordinator.assigned":
            mission["coordinator_agent_id"] = p["coordinator"]["agentId"]
            mission["coordinator_epoch"] = p["coordinator"]["coordinatorEpoch"]
        if kind in _MISSION_STATE or kind == "mission.coordinator.assigned":
            mission["revision"] = max(mission.get("revision", 0), e["aggregateRevision"])
            mission["last_sequence"] = max(mission.get("last_sequence", 0), e["sequence"])
        if kind in _MISSION_STATE:
            mission["state"] = _MISSION_STATE[kind]
            mission["updated_at"] = ts(e["occurredAt"])
    return list(out.values())


def agents(log: Log) -> list[Row]:
    out: dict[str, Row] = {}
    for _, e in log.events:
        p = e["payload"]
        if e["kind"] == "ext.missionweaveprotocol.registry.agent_card_registered":
            card = p["agentCard"]
            known = out.get(card["agentId"], {"session_epoch": 0, "session_opened_at": None})
            out[card["agentId"]] = {
                **known,
                "agent_id": card["agentId"],
                "agent_card_version": card["cardVersion"],
                "max_concurrency": card["maxConcurrency"],
                "capabilities": card["capabilities"],
                "registered_at": ts(e["occurredAt"]),
            }
        elif e["kind"] == "ext.missionweaveprotocol.identity.session_opened":
            out[p["agentId"]].update(
                session_epoch=p["sessionEpoch"], session_opened_at=ts(e["occurredAt"])
            )
    return list(out.values())


def artifact_edges(log: Log) -> list[Row]:
    out = []
    for position, e in log.events:
        p, kind = e["payload"], e["kind"]
        base = {
            "group_id": e.get("groupId"),
            "event_id": e["eventId"],
            "sequence": e.get("sequence"),
            "position": position,
            "mission_id": p.get("missionId"),
        }

        def edge(
            name: str, ft: str, fid: str, tt: str, tid: str, wid: str | None, base: Row = base
        ) -> None:
            out.append(
                {
                    **base,
                    "edge": name,
                    "from_type": ft,
                    "from_id": fid,
                    "to_type": tt,
                    "to_id": tid,
                    "work_item_id": wid,
                }
            )

        if kind == "artifact.published":
            art = p["artifact"]
            for source in art.get("sourceArtifactHashes") or ():
                edge(
                    "derived_from",
                    "artifact",
                    art["contentHash"],
                    "artifact",
                    source,
                    p["workItemId"],
                )
            edge(
                "produced_for",
                "artifact",
                art["contentHash"],
                "work_item",
                p["workItemId"],
                p["workItemId"],
            )
        elif kind == "work.authorized":
            wid = p["workItem"]["workItemId"]
            edge("part_of", "work_item", wid, "mission", p["missionId"], wid)
        elif kind == "mission.created" and (p["mission"].get("parent") or {}).get("workItemId"):
            edge(
                "child_of",
                "mission",
                p["missionId"],
                "work_item",
                p["mission"]["parent"]["workItemId"],
                None,
            )
    return out


#: View name → its fold.
FOLDS = {
    "events": events,
    "rejections": rejections,
    "receipts": receipts,
    "work_items": work_items,
    "work_item_transitions": work_item_transitions,
    "work_item_states": work_item_states,
    "offers": offers,
    "leases": leases,
    "budgets": budgets,
    "signing_keys": signing_keys,
    "memberships": memberships,
    "missions": missions,
    "agents": agents,
    "artifact_edges": artifact_edges,
}
