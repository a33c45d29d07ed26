"""Scripted probes of the proof of concept: Commands submitted through the real Group log.

Each probe builds one Command as a client would (signed by the Principal it names, with the
epochs that Principal's replica knows, or deliberately stale, forged, duplicated or colliding)
and submits it to ``Sandbox.log``. A probe records only what it submitted (``probes.jsonl``:
name, Command text, time); whether the Group Authority accepted or refused it is read back from
the log by the checks (receipts, rejections, Events). Probes never decide a verdict.

Phases: ``during`` (once, at the restart point: Worker-to-Worker conversation, a Worker
proposal, a Context Package for a later reviewer, a Command under the restarted Worker's old
Session), ``step`` (after each step run step by step: a lost race's late acceptance, an
acceptance of an offer that has expired, a stale Ownership Epoch and a superseded Lease ID
forged while a WorkItem's state lets the fence decide, and the Commands a hand-written client
gets wrong while a WorkItem's state lets the rule in question decide: chain-of-thought in an
offer's selection basis and a global queue position in an acceptance's schedule estimate while
it is offered, ``work.submit`` while it is queued, ``work.accept_result`` with no review while it
is submitted) and ``after`` (the other forged and stale Commands built by the campaign's
``Forger``, a duplicate Command, a late result from a replaced owner, reusable knowledge
published by the Organization, a Command of protocol version 0.2 and one under a former kind
name). The ``refused:*`` probes are signed with the epochs the Authority holds (``_client``),
so only the rule they break refuses them.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from ..agents.base import Intent
from ..agents.coordinator.contracts import work_contract
from ..agents.naming import agent_id, group_id, work_item_id
from ..agents.specs import WorkSpec
from ..artifacts.context_packages import PackageScope, build_context_package
from ..authority import Accepted
from ..authority.offline import BOUNDED_OFFLINE
from ..drivers.clock import timestamp
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.timestamps import format_utc, parse_timestamp

if TYPE_CHECKING:
    from ..drivers.sandbox import Sandbox
    from .scenario import Recorder

#: The Context Package schema the Coordinators use for ``data_ref`` Message parts.
CONTEXT_PACKAGE_SCHEMA = "urn:mwp-local:schema:context-package"
#: Contract constraint naming the WorkItems that need a proposed one first.
REQUIRED_BY = "requiredBy"
KNOWLEDGE_PUBLISH = "ext.mwp-local.sandbox.knowledge_publish"


def _submit(sb: Sandbox, rec: Recorder, name: str, data: bytes) -> bool:
    """Submit ``data`` now, deliver what it produced, record the probe; True when accepted."""
    now = sb.clock.now_us()
    outcome = sb.log.submit(data, timestamp(now))
    doc = parse_strict(data)
    rec.add(
        "probes",
        {
            "probe": name,
            "atUs": now,
            "actor": doc.get("actor", {}).get("id"),
            "actionId": doc.get("actionId"),
            "kind": doc.get("kind"),
            "command": data.decode("utf-8"),
        },
    )
    if isinstance(outcome, Accepted):
        sb.deliver([record.document for record in outcome.events])
        return True
    return False


def _as(sb: Sandbox, rec: Recorder, name: str, who: str, intent: Intent) -> bool:
    """Sign ``intent`` as agent or human ``who`` (epochs from its own replica) and submit it."""
    runtime = sb.runtime(who)
    data = runtime.command(intent, format_utc(sb.clock.now_us()))
    return _submit(sb, rec, name, data)


def _fresh_id(sb: Sandbox, rng: random.Random) -> str:
    """A fresh Action ID in the sandbox's Organization scope (unique across sandboxes)."""
    return derived_uuid(sb.organization_id, "probe", f"{rng.getrandbits(128):032x}")


def _resign(sb: Sandbox, doc: dict[str, Any], signer: str | None = None) -> bytes:
    body = {k: v for k, v in doc.items() if k != "signature"}
    return canonicalize(sb.log.org.sign("command", signer or body["actor"]["id"], body))


def _receipt_docs(sb: Sandbox, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        parse_strict(r.command_document)
        for r in sb.log.store.receipts()
        if kind is None or r.kind == kind
    ]


# --------------------------------------------------------------------------- during the run


def _during(sb: Sandbox, rec: Recorder) -> None:
    state = sb.log.state
    billing = group_id("billing")
    checkout = group_id("checkout")
    now = sb.clock.now_us()
    # Worker-to-Worker conversation in a Group's main Conversation between two of its Worker
    # members (Messages carry no authority: nothing changes state).
    coordinators = {m.coordinator_agent_id for m in state.missions.values()}
    for group in (billing, checkout):
        members = sorted(
            p
            for (g, p), m in state.memberships.items()
            if g == group
            and p.startswith("urn:missionweaveprotocol:agent:")
            and p not in coordinators
            and m.state != "ended"
        )
        if len(members) >= 2:
            a, b = members[0], members[1]
            for who, to, text in (
                (a, b, "The rounding change touches invoice_totals(); please cover half-cents."),
                (b, a, "Will do: half-cent cases for EUR and JPY totals."),
            ):
                _as(
                    sb,
                    rec,
                    "worker_conversation",
                    who.rsplit(":", 1)[-1],
                    Intent(
                        kind="message.post",
                        group=group,
                        payload={
                            "content": [{"type": "text", "text": text}],
                            "mentions": [{"type": "agent", "id": to}],
                        },
                    ),
                )
            break
    # A Worker proposes sub-work: a proposal, not a WorkItem, until the Coordinator authorizes.
    hotfix, regression = (
        work_item_id("billing", "hotfix"),
        work_item_id("billing", "regression-tests"),
    )
    if hotfix in state.work_items and regression in state.work_items:
        spec = WorkSpec(
            id="rounding-audit",
            goal="Audit the other places invoice totals are rounded",
            capability=("mwp.software.implement", "1.0.0"),
            duration_s=600,
            budget={"financial": 20, "tool_calls": 20, "compute_seconds": 20000},
        )
        deadline = parse_timestamp(state.missions[state.groups[billing].mission_id].deadline)
        contract = work_contract(spec, dependencies=[hotfix], deadline_us=deadline.epoch_micros)
        contract["constraints"][REQUIRED_BY] = [regression]
        _as(
            sb,
            rec,
            "worker_proposal",
            "dev-shared",
            Intent(
                kind="work.propose",
                group=billing,
                payload={"summary": "other rounding sites need an audit", "contract": contract},
            ),
        )
    # A signed Context Package for a reviewer who joins the checkout Group later.
    mission = (
        state.missions.get(state.groups[checkout].mission_id) if checkout in state.groups else None
    )
    if mission is not None and mission.coordinator_agent_id is not None:
        events = [parse_strict(e.document) for e in sb.log.store.events() if e.group_id == checkout]
        coordinator = sb.log.org.get(mission.coordinator_agent_id.rsplit(":", 1)[-1])
        package = build_context_package(
            events,
            scope=PackageScope(mission_id=mission.mission_id, group_id=checkout),
            generator=coordinator,
            generated_at=format_utc(now),
            constraints=["For the reviewer of the integration: the log stays authoritative"],
        )
        _as(
            sb,
            rec,
            "late_reviewer_context",
            coordinator.id.rsplit(":", 1)[-1],
            Intent(
                kind="message.post",
                group=checkout,
                payload={
                    "content": [
                        {"type": "text", "text": "Context for the integration reviewer."},
                        {"type": "data_ref", "schema": CONTEXT_PACKAGE_SCHEMA, "data": package},
                    ],
                    "mentions": [{"type": "agent", "id": agent_id("reviewer")}],
                    "references": [package["contextPackageId"]],
                },
            ),
        )
    # The restarted Worker's old Session: a Command signed under the epoch before the restart.
    restarted = agent_id("dev-shared")
    epoch = state.agents[restarted].session_epoch if restarted in state.agents else 1
    template = next(
        (
            d
            for d in reversed(_receipt_docs(sb))
            if d["actor"]["id"] == restarted and "sessionEpoch" in d
        ),
        None,
    )
    if template is not None and epoch > 1:
        doc = dict(template)
        doc["actionId"] = _fresh_id(sb, random.Random(f"{sb.seed}:old-session"))
        doc["issuedAt"] = format_utc(now // 1_000_000 * 1_000_000)
        doc["sessionEpoch"] = epoch - 1
        _submit(sb, rec, "old_session_after_restart", _resign(sb, doc))


# --------------------------------------------------------------------------- each step


#: Forgeries of a row's fences: built while some WorkItem is in a state whose table row allows
#: the forged Command's kind (the table is checked first, so only then does the fence decide).
FENCE_FORGERIES = ("stale_ownership", "stale_lease")


def _fence_forgeable(state: Any, variant: str) -> bool:
    """A cheap look at the state before any receipt is read: is there a WorkItem a forgery of
    ``variant`` could be about?"""
    for item in state.work_items.values():
        if variant == "stale_ownership" and item.ownership_epoch > 1:
            if str(item.state) in ("queued", "active"):
                return True
        elif variant == "stale_lease" and item.owner is not None and str(item.state) == "active":
            holder = item.owner["agentId"]
            if any(
                lease.work_item_id == item.work_item_id
                and lease.holder_agent_id == holder
                and lease.lease_type == "execution"
                and lease.lease_id != item.execution_lease_id
                for lease in state.leases.values()
            ):
                return True
    return False


def _fence_forgeries(sb: Sandbox, rec: Recorder, done: set[str]) -> None:
    """Forged stale Ownership Epochs and Lease IDs, while a WorkItem can show the fence."""
    from ..campaign.forgery import Forger

    state = sb.log.state
    wanted = [v for v in FENCE_FORGERIES if f"forged:{v}" not in done]
    wanted = [v for v in wanted if _fence_forgeable(state, v)]
    if not wanted:
        return
    docs = [d for d in _receipt_docs(sb) if BOUNDED_OFFLINE not in (d.get("extensions") or {})]
    for variant in wanted:
        rng = random.Random(f"{sb.seed}:probes:{variant}")
        forgery = Forger(sb.log.org, state, docs, sb.clock.now_us(), rng).make((variant,))
        if forgery is not None:
            done.add(f"forged:{variant}")
            _submit(sb, rec, f"forged:{variant}", forgery.data)


def step_probes(sb: Sandbox, rec: Recorder, done: set[str]) -> None:
    """Probes whose moment comes during the run (each fires once)."""
    state = sb.log.state
    now = sb.clock.now_us()
    _fence_forgeries(sb, rec, done)
    _refusals_in_state(sb, rec, done)
    if "lost_race" not in done:
        lost = next(
            (
                o
                for o in state.offers.values()
                if o.status == "lost_race" and _latest_offer(state, o) is o
            ),
            None,
        )
        if lost is not None:
            done.add("lost_race")
            _accept(sb, rec, "lost_race_accept", lost)
    if "expired_offer" not in done:
        for offer in state.offers.values():
            item = state.work_items.get(offer.work_item_id)
            if (
                item is not None
                and str(item.state) == "offered"
                and offer.status in ("pending", "expired", "withdrawn")
                and now >= offer.expires_us
            ):
                done.add("expired_offer")
                _accept(sb, rec, "expired_offer_accept", offer)
                break


def _latest_offer(state: Any, offer: Any) -> Any:
    """The last offer of ``offer``'s WorkItem made to the same Agent."""
    item = state.work_items.get(offer.work_item_id)
    mine = [
        state.offers[o]
        for o in (item.offer_ids if item else ())
        if state.offers[o].agent_id == offer.agent_id
    ]
    return mine[-1] if mine else None


def _accept(sb: Sandbox, rec: Recorder, name: str, offer: Any) -> None:
    item = sb.log.state.work_items[offer.work_item_id]
    who = offer.agent_id.rsplit(":", 1)[-1]
    _as(
        sb,
        rec,
        name,
        who,
        Intent(
            kind="work.accept_offer",
            group=item.group_id,
            payload={"workItemId": item.work_item_id, "offerId": offer.offer_id},
            overrides={"expected_revision": item.revision},
        ),
    )


# --------------------------------------------------------------------------- refusals


#: Commands a hand-written client sends that the Authority must refuse (issue 21): each fires
#: once, while a WorkItem is in the state where the rule named in its name is what refuses it.
REFUSED = "refused"


def _client(
    sb: Sandbox,
    rec: Recorder,
    name: str,
    who: str,
    kind: str,
    group: str | None,
    payload: dict[str, Any],
    **fields: Any,
) -> bool:
    """Sign a Command as Principal ``who`` (an ID) with the epochs the Authority holds now, as a
    hand-written client that read them would, under a fresh Action ID, and submit it. Unlike
    ``_as``, the agent's own runtime is left alone (its count of sent Commands included)."""
    state = sb.log.state
    now = sb.clock.now_us()
    member = sb.log.org.get(who)
    envelope: dict[str, Any] = {
        "issued_at": format_utc(now),
        "group_id": group,
        "action_id": _fresh_id(sb, random.Random(f"{sb.seed}:{name}")),
    }
    agent = state.agents.get(who)
    if group is not None and agent is not None:
        envelope["session_epoch"] = agent.session_epoch
    if group is not None and group in state.groups:
        membership = state.memberships.get((group, who))
        if membership is not None:
            envelope["membership_epoch"] = membership.epoch
        mission = state.missions[state.groups[group].mission_id]
        if who == mission.coordinator_agent_id:
            envelope["coordinator_epoch"] = mission.coordinator_epoch
    envelope.update(fields)
    return _submit(sb, rec, name, sb.log.org.command(member, kind, payload, **envelope))


def _coordinator_of(state: Any, item: Any) -> str | None:
    mission = state.missions.get(item.mission_id)
    return mission.coordinator_agent_id if mission is not None else None


def _refusals_in_state(sb: Sandbox, rec: Recorder, done: set[str]) -> None:
    """The refusals whose rule speaks only in one state of a WorkItem (the table is checked
    before the fences and the payload rules): an offered item for the §10.3 selection basis
    and the §11.2 schedule estimate, a queued one for the table's ``work.submit`` row, a
    submitted one for the §13.2 review rule."""
    state = sb.log.state
    now = sb.clock.now_us()
    if f"{REFUSED}:offer" not in done:
        _refused_offer(sb, rec, done, now)
    if f"{REFUSED}:submit_queued" not in done:
        for item in state.work_items.values():
            if str(item.state) == "queued" and item.owner is not None:
                done.add(f"{REFUSED}:submit_queued")
                _client(
                    sb,
                    rec,
                    f"{REFUSED}:submit_queued",
                    item.owner["agentId"],
                    "work.submit",
                    item.group_id,
                    {
                        "workItemId": item.work_item_id,
                        "ownershipEpoch": item.ownership_epoch,
                        "leaseId": item.execution_lease_id or "urn:mwp-local:lease:none-current",
                        "artifactHashes": [],
                        "evidence": [],
                    },
                )
                break
    if f"{REFUSED}:accept_result_no_review" not in done:
        for item in state.work_items.values():
            coordinator = _coordinator_of(state, item)
            if str(item.state) == "submitted" and coordinator is not None:
                done.add(f"{REFUSED}:accept_result_no_review")
                _refused_accept_result(sb, rec, item, coordinator)
                break


def _refused_accept_result(sb: Sandbox, rec: Recorder, item: Any, coordinator: str) -> None:
    """§13.2: ``work.accept_result`` with no review at all (no Evidence of one, no record)."""
    _client(
        sb,
        rec,
        f"{REFUSED}:accept_result_no_review",
        coordinator,
        "work.accept_result",
        item.group_id,
        {"workItemId": item.work_item_id, "reviewEvidence": []},
    )


def _refused_offer(sb: Sandbox, rec: Recorder, done: set[str], now: int) -> None:
    """While an item is offered to a Worker (the offer pending, unexpired, nobody owning the
    item): the Coordinator's offer again with chain-of-thought in its selection basis (§10.3),
    and the Worker's acceptance with its exact global queue position in its schedule estimate
    (§11.2)."""
    state = sb.log.state
    for offer in state.offers.values():
        item = state.work_items.get(offer.work_item_id)
        if (
            item is None
            or str(item.state) != "offered"
            or item.owner is not None
            or offer.status != "pending"
            or now + 60_000_000 >= offer.expires_us
            or _latest_offer(state, offer) is not offer
        ):
            continue
        template = next(
            (
                d
                for d in reversed(_receipt_docs(sb, "work.offer"))
                if d["payload"].get("workItemId") == item.work_item_id
                and isinstance(d["payload"].get("selectionBasis"), dict)
            ),
            None,
        )
        if template is None:
            continue
        done.add(f"{REFUSED}:offer")
        _client(
            sb,
            rec,
            f"{REFUSED}:selection_basis_chain_of_thought",
            template["actor"]["id"],
            "work.offer",
            item.group_id,
            {
                "workItemId": item.work_item_id,
                "agentId": offer.agent_id,
                "expiresAt": format_utc(offer.expires_us),
                "selectionBasis": {
                    **template["payload"]["selectionBasis"],
                    "chainOfThought": "the first candidate seemed keen; the other was slow once",
                },
            },
            expected_revision=item.revision,
        )
        _client(
            sb,
            rec,
            f"{REFUSED}:schedule_estimate_queue_position",
            offer.agent_id,
            "work.accept_offer",
            item.group_id,
            {
                "workItemId": item.work_item_id,
                "offerId": offer.offer_id,
                "scheduleEstimate": {
                    "estimatedStart": format_utc(now + 60_000_000),
                    "estimatedCompletion": format_utc(now + 3_600_000_000),
                    "confidence": 0.7,
                    "capacityStatus": "queued",
                    "lastCalculatedAt": format_utc(now),
                    "globalQueuePosition": 3,
                },
            },
            expected_revision=item.revision,
        )
        return


def _refused_anytime(sb: Sandbox, rec: Recorder) -> None:
    """Refusals that hold in any state: a protocol version the Authority does not implement
    (§19 ``UNSUPPORTED_VERSION``) and a sandbox kind under its former name."""
    state = sb.log.state
    group, who = next(
        (
            (g, p)
            for (g, p), m in sorted(state.memberships.items())
            if m.state != "ended" and p.startswith("urn:missionweaveprotocol:agent:")
        ),
        (None, None),
    )
    if group is None or who is None:
        return
    _client(
        sb,
        rec,
        f"{REFUSED}:protocol_version",
        who,
        "message.post",
        group,
        {"content": [{"type": "text", "text": "hello from a 0.2 client"}]},
        extra={"protocolVersion": "0.2"},
    )
    item = next(
        (i for i in state.work_items.values() if i.owner is not None and i.owner["agentId"] == who),
        None,
    )
    _client(
        sb,
        rec,
        f"{REFUSED}:former_kind",
        who,
        "ext.missionweaveprotocol.core.execution_lease_renew",
        group,
        {
            "workItemId": item.work_item_id if item is not None else "urn:mwp-local:work:none",
            "ownershipEpoch": item.ownership_epoch if item is not None else 1,
            "leaseId": (item.execution_lease_id if item is not None else None)
            or "urn:mwp-local:lease:none-current",
        },
    )


# --------------------------------------------------------------------------- after the run


def _after(sb: Sandbox, rec: Recorder) -> None:
    from ..campaign.forgery import FORGED, STALE, Forger

    docs = _receipt_docs(sb)
    rng = random.Random(f"{sb.seed}:probes")
    # A rebased offline checkpoint is fenced by its bounded-offline binding first (its
    # historical lease window): a forgery built on one would probe that fence, not its own.
    templates = [d for d in docs if BOUNDED_OFFLINE not in (d.get("extensions") or {})]
    forger = Forger(sb.log.org, sb.log.state, templates, sb.clock.now_us(), rng)
    for variant in (*FORGED, *STALE):
        if variant in FENCE_FORGERIES:
            continue  # made during the run (``_fence_forgeries``)
        forgery = forger.make((variant,))
        if forgery is not None:
            _submit(sb, rec, f"forged:{variant}", forgery.data)
    # An unchanged retry of an accepted Command (the exact bytes): idempotent.
    submitted = next((r for r in sb.log.store.receipts() if r.kind == "work.submit"), None)
    if submitted is not None:
        _submit(sb, rec, "duplicate_command", submitted.command_document.encode("utf-8"))
    _late_result(sb, rec, docs)


LEASE_EXPIRED = "ext.mwp-local.sandbox.lease_expired"


def _late_result(sb: Sandbox, rec: Recorder, docs: list[dict[str, Any]]) -> None:
    """A replaced owner submits its result after the WorkItem was reassigned (§11.5)."""
    state = sb.log.state
    kinds = (LEASE_EXPIRED, "work.offer.accepted")  # only these are read below
    events = [parse_strict(e.document) for e in sb.log.store.events() if e.kind in kinds]
    for i, event in enumerate(events):
        if event["kind"] != LEASE_EXPIRED:
            continue
        wid = event.get("workItemId")
        accepted = [
            e
            for e in events[:i]
            if e["kind"] == "work.offer.accepted" and e.get("workItemId") == wid
        ]
        final = next(
            (
                d
                for d in reversed(docs)
                if d["kind"] == "work.submit" and d["payload"].get("workItemId") == wid
            ),
            None,
        )
        if not wid or not accepted or final is None:
            continue
        old = accepted[-1]
        if old["actor"]["id"] == final["actor"]["id"]:
            continue
        doc = dict(final)
        doc["actor"] = old["actor"]
        doc["payload"] = {
            **final["payload"],
            "ownershipEpoch": final["payload"].get("ownershipEpoch", 2) - 1,
            "leaseId": event["payload"].get("leaseId", final["payload"].get("leaseId")),
        }
        doc["actionId"] = _fresh_id(sb, random.Random(f"{sb.seed}:late:{wid}"))
        doc["issuedAt"] = format_utc(sb.clock.now_us() // 1_000_000 * 1_000_000)
        member = state.memberships.get((doc["groupId"], old["actor"]["id"]))
        agent = state.agents.get(old["actor"]["id"])
        if member is not None:
            doc["membershipEpoch"] = member.epoch
        if agent is not None:
            doc["sessionEpoch"] = agent.session_epoch
        _submit(sb, rec, "late_result", _resign(sb, doc))
        return


def _knowledge(sb: Sandbox, rec: Recorder) -> None:
    """The Organization publishes a reviewed, internal Artifact as reusable knowledge."""
    state = sb.log.state
    for manifest in sorted(
        state.artifacts.values(), key=lambda m: (m["contentHash"], m["artifactId"])
    ):
        item = state.work_items.get(manifest.get("workItemId", ""))
        if item is None or str(item.state) != "verified":
            continue
        if manifest.get("classification") not in ("internal", "public"):
            continue
        org = sb.log.org
        data = org.command(
            org.control_plane,
            KNOWLEDGE_PUBLISH,
            {
                "artifactHash": manifest["contentHash"],
                "classification": manifest["classification"],
                "reason": "reusable analysis of the payment requirements",
            },
            group_id=item.group_id,
            issued_at=format_utc(sb.clock.now_us()),
            action_id=_fresh_id(sb, random.Random(f"{sb.seed}:knowledge")),
        )
        _submit(sb, rec, "knowledge_publish", data)
        return


def run_probes(sb: Sandbox, rec: Recorder, *, phase: str) -> None:
    """Run the probes of ``phase`` (``during`` or ``after``)."""
    if phase == "during":
        _during(sb, rec)
    elif phase == "after":
        _after(sb, rec)
        _knowledge(sb, rec)
        _refused_anytime(sb, rec)
    else:
        raise ValueError(phase)


__all__ = ["run_probes", "step_probes"]
