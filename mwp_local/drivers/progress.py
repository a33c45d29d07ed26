"""Whether a run is getting anywhere, and, when it is not, what every unfinished WorkItem waits
for (issue 22.2: a run that makes no progress stops and says why).

``Progress`` remembers the state of every WorkItem and Mission it has seen and when one last
changed; the Sandbox feeds it what each step committed (step mode) or a consistent scan of the
state (threads mode). ``waits`` reads the Authority's state, the mission file and the agents'
runtimes and says, in a learner's words, what each unfinished WorkItem and Mission waits for
and on whom, and whether that agent is silent (it never sent a Command, it is paused or
crashed). ``Stall`` is the report: why the run stopped and the waits.

Reads only; decides nothing (the Authority and the agents do).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents.base import unwrap
from ..agents.faults import FaultyPolicy
from ..agents.naming import agent_id, human_id, mission_id, short, work_item_id
from ..agents.runtime import AgentRuntime
from ..agents.specs import MissionFile, MissionSpec
from ..agents.worker.admission import DECLINE_SCHEMA
from ..authority.model import WorkItemRecord
from ..authority.records import RejectionRecord
from ..authority.state import AuthorityState
from ..protocol.errors import ProtocolError
from ..protocol.tables import MissionState, WorkItemState
from ..protocol.timestamps import format_utc, parse_timestamp

W = WorkItemState
M = MissionState
_DONE = (W.VERIFIED, W.CANCELLED)
_TERMINAL = (M.APPROVED, M.CANCELLED, M.FAILED)


@dataclass
class Progress:
    """When some WorkItem or Mission last changed state (virtual µs)."""

    last_change_us: int
    _states: dict[str, str] = field(default_factory=dict)
    #: WorkItem or Mission ID → when it last changed state (as seen).
    _changed: dict[str, int] = field(default_factory=dict)

    def note(
        self, state: AuthorityState, events: Iterable[str | Mapping[str, Any]], now_us: int
    ) -> None:
        """Look at the WorkItems and Missions ``events`` (just committed, as documents or their
        JSON text) are about."""
        for event in events:
            if isinstance(event, str):
                event = json.loads(event)
            payload = event.get("payload", {})
            wid = event.get("workItemId") or payload.get("workItemId")
            if isinstance(wid, str) and wid in state.work_items:
                self._see(wid, str(state.work_items[wid].state), now_us)
            group = state.groups.get(str(event.get("groupId")))
            if group is not None and group.mission_id in state.missions:
                self._see(group.mission_id, str(state.missions[group.mission_id].state), now_us)

    def scan(self, state: AuthorityState, now_us: int) -> None:
        """Look at every WorkItem and Mission (hold the Group log's lock: ``GroupLog.read``)."""
        for wid, item in state.work_items.items():
            self._see(wid, str(item.state), now_us)
        for mid, mission in state.missions.items():
            self._see(mid, str(mission.state), now_us)

    def _see(self, key: str, value: str, now_us: int) -> None:
        if self._states.get(key) != value:
            self._states[key] = value
            self._changed[key] = now_us
            self.last_change_us = now_us

    def since(self, key: str) -> int | None:
        """When WorkItem or Mission ``key`` last changed state (None: not seen)."""
        return self._changed.get(key)


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait:
    """One unfinished WorkItem (or Mission) and what it waits for."""

    mission: str
    #: The WorkItem's short ID, or "" for the Mission itself.
    work_item: str
    state: str
    waits_for: str
    #: The agent or human it waits on, if one.
    on: str | None = None

    def line(self) -> str:
        """One line for a person."""
        what = f"WorkItem '{self.work_item}'" if self.work_item else "the Mission"
        return f"{self.mission}: {what} ({self.state}) waits for {self.waits_for}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Stall:
    """Why a run stopped before every Mission finished, and what waits for what."""

    reason: str
    at: str
    waits: tuple[Wait, ...] = ()
    #: The Commands the Authority refused since the last change of state, one line per actor,
    #: kind, WorkItem and code (what an agent tried and could not do may be what holds it up).
    refusals: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """A printable report."""
        out = [f"Stopped at {self.at}: {self.reason}."]
        if self.waits:
            out.append("  Waiting:")
            out += [f"    {w.line()}" for w in self.waits]
        if self.refusals:
            out.append("  Refused since the last change:")
            out += [f"    {r}" for r in self.refusals]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _duration(us: int) -> str:
    seconds = us // 1_000_000
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes = rest // 60
    parts = [f"{n}{u}" for n, u in ((days, "d"), (hours, "h"), (minutes, "m")) if n]
    return "".join(parts) or f"{seconds}s"


def stall_reason(kind: str, *, quiet_us: int = 0, steps: int = 0) -> str:
    """The words for why a run stopped: ``quiet`` (no state changed for ``quiet_us``),
    ``budget`` (``steps`` spent) or ``idle`` (nobody will ever act again)."""
    if kind == "quiet":
        return (
            f"no WorkItem or Mission changed state for {_duration(quiet_us)} of simulated time "
            "(Sandbox(stall_after=...) sets how long)"
        )
    if kind == "budget":
        return f"the step budget ran out after {steps} steps (run(max_steps=...))"
    if kind == "timeout":
        return "the threads run's time ran out (run(timeout_s=...))"
    return "no agent wants to act, and none asks to be woken again"


class _Agents:
    """What ``waits`` says about the agents: who is silent, paused or crashed."""

    def __init__(
        self, runtimes: Sequence[AgentRuntime], now_us: int, progress: Progress | None = None
    ) -> None:
        self.runtimes = {r.member.id: r for r in runtimes}
        self.now_us = now_us
        self.progress = progress
        #: What is being explained: the WorkItem (or Group) waiting, and since when.
        self.subject: tuple[str, int] | None = None

    def waiting(self, key: str, changed: str | None = None) -> None:
        """Explain next what waits about ``key`` (a WorkItem ID, or a Mission's Group ID), which
        has waited since WorkItem or Mission ``changed`` (default ``key``) last changed state."""
        since = None if self.progress is None else self.progress.since(changed or key)
        self.subject = (key, since or 0)

    def idle(self, runtime: AgentRuntime) -> str | None:
        """ "asked ... and sent nothing", if the policy was asked to decide while the current
        subject waited and wanted nothing about it."""
        if self.subject is None:
            return None
        key, since = self.subject
        asked = runtime.asks_since(since)
        if asked == 0 or runtime.acted_on.get(key, -1) >= since:
            return None
        return f"asked to decide {asked} times since {format_utc(since)}"

    def about(self, principal_id: str | None) -> str:
        if principal_id is None:
            return ""
        runtime = self.runtimes.get(principal_id)
        if runtime is None:
            return ""
        notes = []
        policy = runtime.policy
        while True:
            if isinstance(policy, FaultyPolicy) and policy.down(self.now_us):
                crashed = any(a <= self.now_us and b is None for a, b in policy.windows)
                notes.append("it has crashed" if crashed else "it is paused")
            inner = getattr(policy, "inner", None)
            if inner is None:
                break
            policy = inner
        kind = type(unwrap(runtime.policy)).__name__
        idle = self.idle(runtime)
        if runtime.sent == 0:
            notes.append(
                f"its policy ({kind}) has not sent a single Command"
                + (f", though {idle}" if idle else "")
            )
        elif idle is not None:
            notes.append(f"its policy ({kind}) was {idle} and sent nothing about it")
        return f" ({'; '.join(notes)})" if notes else ""


def _declines(state: AuthorityState, item: WorkItemRecord) -> list[str]:
    """The structured declines posted about ``item``: "who: reason (detail)"."""
    out = []
    for message in state.messages.values():
        if message.get("conversationId") != item.conversation_id:
            continue
        for part in message.get("content", []):
            if part.get("type") == "data_ref" and part.get("schema") == DECLINE_SCHEMA:
                data = part.get("data", {})
                reason = str(data.get("reason", "other"))
                detail = data.get("details", {}).get(reason, "")
                out.append(
                    f"{short(message['author']['id'])}: {reason}"
                    + (f" ({detail})" if detail else "")
                )
    return list(dict.fromkeys(out))


def _capable(state: AuthorityState, item: WorkItemRecord, coordinator: str | None) -> list[str]:
    required = item.contract["requiredCapabilities"]
    out = []
    for agent in state.agents.values():
        if agent.agent_id == coordinator:
            continue
        have = dict(agent.capabilities)
        if all(c["id"] in have for c in required):
            out.append(agent.agent_id)
    return sorted(out)


def _item_wait(
    state: AuthorityState, item: WorkItemRecord, coordinator: str | None, agents: _Agents
) -> tuple[str, str | None]:
    """What ``item`` waits for, and on whom."""
    s = item.state
    owner = item.owner["agentId"] if item.owner else None
    unmet = [
        f"'{short(d)}' ({state.work_items[d].state})" if d in state.work_items else f"'{short(d)}'"
        for d in item.dependencies
        if d not in state.work_items or state.work_items[d].state is not W.VERIFIED
    ]
    if s is W.OPEN and unmet:
        return f"its dependencies {', '.join(unmet)} to be verified", None
    if s in (W.OPEN, W.FAILED):
        capable = _capable(state, item, coordinator)
        caps = ", ".join(f"{c['id']}@{c['version']}" for c in item.contract["requiredCapabilities"])
        declined = _declines(state, item)
        retry = (
            f"a retry (attempt {item.attempts} of "
            f"{item.contract['retryPolicy']['maxAttempts']} failed): "
            if s is W.FAILED
            else ""
        )
        if not capable:
            return f"{retry}an offer, but no Agent but the Coordinator offers {caps}", coordinator
        if declined:
            return (
                f"{retry}an offer to someone who will accept; declined so far: "
                + "; ".join(declined),
                coordinator,
            )
        who = short(coordinator) if coordinator else "the Coordinator"
        return f"{retry}the Coordinator {who} to offer it{agents.about(coordinator)}", coordinator
    if s is W.OFFERED:
        pending = [
            state.offers[o]
            for o in item.offer_ids
            if state.offers[o].status == "pending" and state.offers[o].expires_us > agents.now_us
        ]
        if pending:
            first = pending[0].agent_id
            names = ", ".join(short(o.agent_id) for o in pending)
            return (
                f"{names} to answer the offer (until {format_utc(pending[0].expires_us)})"
                f"{agents.about(first)}",
                first,
            )
        lapsed = [
            state.offers[o].agent_id
            for o in item.offer_ids
            if state.offers[o].status in ("pending", "expired")
            and state.offers[o].expires_us <= agents.now_us
        ]
        unanswered = "; ".join(
            f"{short(a)} never answered{agents.about(a)}" for a in dict.fromkeys(lapsed)
        )
        return (
            "the Coordinator to offer it again (its offers expired"
            + (f": {unanswered}" if unanswered else "")
            + f"){agents.about(coordinator) if not unanswered else ''}",
            coordinator,
        )
    if s is W.QUEUED:
        if item.contract["executionApproval"] != "not_required" and not item.execution_approved:
            return "the MissionOwner's execution approval (§12)", None
        gates = [
            f"'{short(d)}'"
            for d in item.dependencies
            if state.work_items[d].state is not W.VERIFIED
        ]
        if gates:
            return f"its dependencies {', '.join(gates)} before its owner may start it", owner
        return f"its owner {short(owner or '')} to start it{agents.about(owner)}", owner
    if s is W.ACTIVE:
        lease = state.leases.get(item.execution_lease_id or "")
        until = f" (Execution Lease until {format_utc(lease.expires_us)})" if lease else ""
        return f"its owner {short(owner or '')} to finish{until}{agents.about(owner)}", owner
    if s is W.BLOCKED:
        if item.child_mission_id is not None:
            return f"its child Mission {short(item.child_mission_id)}", None
        needed = (item.last_checkpoint or {}).get("progress", {}).get("blockers") or []
        what = f": {needed[0]}" if needed else ""
        return (
            f"the Coordinator to resolve its blocker{what}{agents.about(coordinator)}",
            coordinator,
        )
    if s is W.SUBMITTED:
        return f"the Coordinator's review (§13.2){agents.about(coordinator)}", coordinator
    return f"something to happen (state {s})", None


def waits(
    state: AuthorityState,
    spec: MissionFile,
    runtimes: Sequence[AgentRuntime],
    now_us: int,
    progress: Progress | None = None,
) -> tuple[Wait, ...]:
    """What every unfinished WorkItem and Mission of ``spec`` waits for; with ``progress``, an
    agent whose policy was asked to decide while the work waited for it and did nothing is
    named so."""
    agents = _Agents(runtimes, now_us, progress)
    out: list[Wait] = []
    for mspec in spec.missions:
        mid = mission_id(mspec.id)
        mission = state.missions.get(mid)
        if mission is None:
            if mspec.parent is None:
                owner = human_id(mspec.owner)
                out.append(
                    Wait(
                        mission=mspec.id,
                        work_item="",
                        state="not created",
                        waits_for=f"its owner {mspec.owner} to create it{agents.about(owner)}",
                        on=owner,
                    )
                )
            continue
        if mission.state in _TERMINAL:
            continue
        coordinator = mission.coordinator_agent_id
        agents.waiting(mission.group_id, changed=mid)
        if mission.state is M.AWAITING_APPROVAL:
            out.append(
                Wait(
                    mission=mspec.id,
                    work_item="",
                    state=str(mission.state),
                    waits_for=f"the MissionOwner's Approval{agents.about(mission.owner_id)}",
                    on=mission.owner_id,
                )
            )
        items = sorted(
            (i for i in state.work_items.values() if i.mission_id == mid),
            key=lambda i: i.work_item_id,
        )
        for item in items:
            if item.state in _DONE:
                continue
            agents.waiting(item.work_item_id)
            waits_for, on = _item_wait(state, item, coordinator, agents)
            out.append(
                Wait(
                    mission=mspec.id,
                    work_item=short(item.work_item_id),
                    state=str(item.state),
                    waits_for=waits_for,
                    on=on,
                )
            )
        out += _unplanned(state, mspec, coordinator, agents)
    return tuple(out)


def _unplanned(
    state: AuthorityState, mspec: MissionSpec, coordinator: str | None, agents: _Agents
) -> list[Wait]:
    """The mission file's WorkItems the Coordinator has not authorized yet."""
    out = []
    for work in mspec.work:
        if work_item_id(mspec.id, work.id) in state.work_items:
            continue
        agents.waiting(work_item_id(mspec.id, work.id), changed=mission_id(mspec.id))
        later = [
            a
            for a in work.discovered_after
            if (i := state.work_items.get(work_item_id(mspec.id, a))) is None
            or i.state is not W.VERIFIED
        ]
        if later:
            why = f"'{', '.join(later)}' to be verified (it is discovered after them)"
        else:
            missing = [
                d for d in work.depends_on if work_item_id(mspec.id, d) not in state.work_items
            ]
            why = (
                f"its dependencies {', '.join(missing)} to be planned"
                if missing
                else f"the Coordinator {short(coordinator or agent_id(mspec.coordinator))} to "
                f"authorize it{agents.about(coordinator)}"
            )
        out.append(
            Wait(
                mission=mspec.id,
                work_item=work.id,
                state="not planned",
                waits_for=why,
                on=coordinator,
            )
        )
    return out


def refusals(rejections: Iterable[RejectionRecord], since_us: int) -> tuple[str, ...]:
    """Each kind of refusal received at or after ``since_us``, once: who, which Command, about
    which WorkItem, the section-19 code and the Authority's explanation (with how often)."""
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for r in rejections:
        try:
            at = parse_timestamp(r.received_at).epoch_micros
        except ProtocolError:
            continue
        if at < since_us:
            continue
        about = r.work_item_id or _payload_work_item(r.command_text)
        key = (r.actor_id, r.kind, about, r.code)
        if key in seen:
            seen[key][1] += 1
        else:
            seen[key] = [r, 1]
    out = []
    for (actor, kind, about, code), (record, times) in seen.items():
        what = f"{kind} of '{short(about)}'" if about else str(kind)
        again = f" ({times} times)" if times > 1 else ""
        out.append(f"{short(actor or '?')}: {what} refused {code}{again}: {record.explanation}")
    return tuple(out)


def _payload_work_item(command_text: str) -> str | None:
    try:
        payload = json.loads(command_text).get("payload", {})
    except (ValueError, AttributeError):
        return None
    wid = payload.get("workItemId") if isinstance(payload, dict) else None
    return wid if isinstance(wid, str) else None


__all__ = ["Progress", "Stall", "Wait", "refusals", "stall_reason", "waits"]
