"""Forged and stale Commands, each with the one section-19 code it must be refused with.

Every forgery starts from a Command the Group Authority accepted earlier (taken from the log's
receipts, so it is well-formed and was once authorized) and changes exactly one thing, then
signs it again where the variant needs a valid signature. The fences that are *not* under test
are brought up to date from the Authority's current state, so that the one that is decides:

* ``bad_signature``: one character of the signature value changed (``AUTH_INVALID_SIGNATURE``);
* ``wrong_key``: signed with another Agent's key for the same actor (``AUTH_INVALID_SIGNATURE``);
* ``stale_issued_at``: ``issuedAt`` outside the freshness window (``AUTH_INVALID_SIGNATURE``);
* ``action_id_collision``: an accepted Action ID reused for other content
  (``ACTION_ID_COLLISION``);
* ``stale_session`` / ``stale_membership`` / ``stale_coordinator``: an epoch other than the
  current one, lower where a lower one exists (``AUTH_STALE_SESSION``, ``MEMBERSHIP_STALE``,
  ``AUTH_STALE_COORDINATOR``);
* ``stale_ownership``: an Ownership Epoch below the WorkItem's current one
  (``WORK_STALE_OWNERSHIP``);
* ``stale_lease``: the current owner citing an Execution Lease that is no longer its current one
  (``WORK_LEASE_EXPIRED``).

The Authority checks the state tables before a row's fences (a transition the table forbids is
``INVALID_STATE_TRANSITION`` whatever else is wrong), so the last two are built only from a
Command whose kind the WorkItem's current state allows: the fence under test then decides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..authority.model import WorkItemRecord
from ..authority.organization import Organization
from ..authority.state import AuthorityState
from ..protocol.errors import ErrorCode
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.tables import IN_STATE_ACTIONS, PROTOCOL_TABLES, WorkItemAction
from ..protocol.timestamps import format_utc

E = ErrorCode
FORGED = ("bad_signature", "wrong_key")
STALE = (
    "stale_issued_at",
    "action_id_collision",
    "stale_session",
    "stale_membership",
    "stale_coordinator",
    "stale_ownership",
    "stale_lease",
)


@dataclass(frozen=True, slots=True)
class Forgery:
    """A Command to submit and the code it must be refused with."""

    variant: str
    data: bytes
    expected: ErrorCode
    actor: str
    action_id: str


def _state_allows(kind: str, item: WorkItemRecord) -> bool:
    """Whether the WorkItem's current state allows a Command of ``kind`` (its row of the
    WorkItem table, or the states of an in-state action)."""
    row = PROTOCOL_TABLES.work_item.for_command(kind)
    if row is not None:
        return item.state in row.sources
    action = next((a for a in WorkItemAction if a.value == kind), None)
    return action is None or item.state in IN_STATE_ACTIONS[action]


def _stale(current: int) -> int:
    """An epoch that is not the current one: lower when a lower valid one exists."""
    return current - 1 if current > 1 else current + 1


class Forger:
    """Builds forgeries against the Authority's current ``state`` at virtual time ``now_us``."""

    def __init__(
        self,
        org: Organization,
        state: AuthorityState,
        templates: list[dict[str, Any]],
        now_us: int,
        rng: random.Random,
    ) -> None:
        self.org = org
        self.state = state
        self.templates = [t for t in templates if t["actor"]["type"] == "agent"]
        self.now_us = now_us
        self.rng = rng

    def make(self, variants: tuple[str, ...]) -> Forgery | None:
        """A forgery of the first constructible variant, in a seeded order."""
        order = list(variants)
        self.rng.shuffle(order)
        for variant in order:
            forgery = getattr(self, f"_{variant}")()
            if forgery is not None:
                return forgery  # type: ignore[no-any-return]
        return None

    # ------------------------------------------------------------------ helpers

    def _pick(self, predicate: Any) -> dict[str, Any] | None:
        candidates = [t for t in self.templates if predicate(t)]
        return dict(self.rng.choice(candidates)) if candidates else None

    def _fresh(self, doc: dict[str, Any], *, keep_action: bool = False) -> dict[str, Any]:
        """``doc`` with a new Action ID, a current ``issuedAt`` and current fences."""
        doc = {k: v for k, v in doc.items() if k != "signature"}
        doc["payload"] = dict(doc["payload"])
        if not keep_action:
            doc["actionId"] = derived_uuid(
                self.org.organization_id, "forgery", f"{self.rng.getrandbits(128):032x}"
            )
        doc["issuedAt"] = format_utc(self.now_us // 1000 * 1000)
        actor = doc["actor"]["id"]
        agent = self.state.agents.get(actor)
        if "sessionEpoch" in doc and agent is not None:
            doc["sessionEpoch"] = agent.session_epoch
        membership = self.state.memberships.get((doc.get("groupId") or "", actor))
        if "membershipEpoch" in doc and membership is not None:
            doc["membershipEpoch"] = membership.epoch
        return doc

    def _sign(self, doc: dict[str, Any], as_member: str | None = None) -> bytes:
        return canonicalize(self.org.sign("command", as_member or doc["actor"]["id"], doc))

    def _forgery(self, variant: str, doc: dict[str, Any], data: bytes, code: ErrorCode) -> Forgery:
        return Forgery(variant, data, code, doc["actor"]["id"], doc["actionId"])

    def _live_agent(self, t: dict[str, Any]) -> bool:
        agent = self.state.agents.get(t["actor"]["id"])
        return agent is not None and agent.session_epoch > 0

    def _member(self, t: dict[str, Any]) -> bool:
        m = self.state.memberships.get((t.get("groupId") or "", t["actor"]["id"]))
        return self._live_agent(t) and m is not None and m.state != "ended"

    # ------------------------------------------------------------------ variants

    def _bad_signature(self) -> Forgery | None:
        t = self._pick(self._live_agent)
        if t is None:
            return None
        doc = parse_strict(self._sign(self._fresh(t)))
        value = doc["signature"]["value"]
        flipped = "A" if value[10] != "A" else "B"
        doc["signature"] = {**doc["signature"], "value": value[:10] + flipped + value[11:]}
        return self._forgery("bad_signature", doc, canonicalize(doc), E.AUTH_INVALID_SIGNATURE)

    def _wrong_key(self) -> Forgery | None:
        t = self._pick(self._live_agent)
        others = [a.id for a in self.org.agents() if a.id != (t or {}).get("actor", {}).get("id")]
        if t is None or not others:
            return None
        doc = self._fresh(t)
        data = self._sign(doc, as_member=self.rng.choice(sorted(others)))
        return self._forgery("wrong_key", doc, data, E.AUTH_INVALID_SIGNATURE)

    def _stale_issued_at(self) -> Forgery | None:
        t = self._pick(self._live_agent)
        if t is None:
            return None
        doc = self._fresh(t)
        skew = self.rng.choice((-3_600_000_000, 3_600_000_000))
        doc["issuedAt"] = format_utc((self.now_us + skew) // 1000 * 1000)
        return self._forgery("stale_issued_at", doc, self._sign(doc), E.AUTH_INVALID_SIGNATURE)

    def _action_id_collision(self) -> Forgery | None:
        t = self._pick(self._live_agent)
        if t is None:
            return None
        doc = self._fresh(t, keep_action=True)
        if doc["issuedAt"] == t["issuedAt"]:
            doc["issuedAt"] = format_utc((self.now_us // 1000 + 1) * 1000)
        return self._forgery("action_id_collision", doc, self._sign(doc), E.ACTION_ID_COLLISION)

    def _stale_session(self) -> Forgery | None:
        t = self._pick(lambda t: "sessionEpoch" in t and self._live_agent(t))
        if t is None:
            return None
        doc = self._fresh(t)
        doc["sessionEpoch"] = _stale(int(doc["sessionEpoch"]))
        return self._forgery("stale_session", doc, self._sign(doc), E.AUTH_STALE_SESSION)

    def _stale_membership(self) -> Forgery | None:
        t = self._pick(lambda t: "membershipEpoch" in t and self._member(t))
        if t is None:
            return None
        doc = self._fresh(t)
        doc["membershipEpoch"] = _stale(int(doc["membershipEpoch"]))
        return self._forgery("stale_membership", doc, self._sign(doc), E.MEMBERSHIP_STALE)

    def _stale_coordinator(self) -> Forgery | None:
        t = self._pick(lambda t: "coordinatorEpoch" in t and self._member(t))
        if t is None:
            return None
        doc = self._fresh(t)
        mission = self.state.missions[self.state.groups[doc["groupId"]].mission_id]
        doc["coordinatorEpoch"] = _stale(mission.coordinator_epoch)
        return self._forgery("stale_coordinator", doc, self._sign(doc), E.AUTH_STALE_COORDINATOR)

    def _stale_ownership(self) -> Forgery | None:
        def usable(t: dict[str, Any]) -> bool:
            item = self.state.work_items.get(t["payload"].get("workItemId", ""))
            return (
                "ownershipEpoch" in t["payload"]
                and "coordinatorEpoch" not in t
                and item is not None
                and _state_allows(t["kind"], item)
                and item.ownership_epoch > 1
                and self._member(t)
            )

        t = self._pick(usable)
        if t is None:
            return None
        doc = self._fresh(t)
        item = self.state.work_items[doc["payload"]["workItemId"]]
        doc["payload"]["ownershipEpoch"] = item.ownership_epoch - 1
        return self._forgery("stale_ownership", doc, self._sign(doc), E.WORK_STALE_OWNERSHIP)

    def _stale_lease(self) -> Forgery | None:
        def usable(t: dict[str, Any]) -> bool:
            item = self.state.work_items.get(t["payload"].get("workItemId", ""))
            return (
                "leaseId" in t["payload"]
                and "ownershipEpoch" in t["payload"]
                and "coordinatorEpoch" not in t
                and item is not None
                and item.owner is not None
                and item.owner["agentId"] == t["actor"]["id"]
                and t["payload"]["leaseId"] != item.execution_lease_id
                and _state_allows(t["kind"], item)
                and self._member(t)
            )

        t = self._pick(usable)
        if t is None:
            return None
        doc = self._fresh(t)
        item = self.state.work_items[doc["payload"]["workItemId"]]
        doc["payload"]["ownershipEpoch"] = item.ownership_epoch
        return self._forgery("stale_lease", doc, self._sign(doc), E.WORK_LEASE_EXPIRED)
