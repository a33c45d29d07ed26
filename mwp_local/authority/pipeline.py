"""The Command pipeline of the Group Authority (§6.4, §15.1), pure decision code.

``Authority.handle`` takes the bytes of a signed Command and the current time and returns an
``Accepted`` (signed Events, receipt, projection rows) or a ``Rejected`` (a ``ProtocolError`` with
the section-19 code and a ``RejectionRecord``). The in-memory state is changed only by folding
accepted Events; a rejected Command leaves it exactly as it was, and an unexpected failure while
deciding is refused ``INTERNAL_ERROR`` after the state was rolled back. Persisting an outcome is
the ``GroupLog``'s job (``mwp_local.store.group_log``).

An outcome is a value: the state keeps the objects of the Event documents it folded (a record
holds a payload's ``owner`` or ``contract`` as it was signed), so those documents never leave the
Authority. What a caller reads of an ``Accepted`` is its log rows (immutable, each with the
Event's canonical text) and ``event_documents``, parsed afresh from that text on each read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..protocol.documents.kinds import ExtensionEventKind
from ..protocol.ed25519 import SigningKeyPair
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for as _profile_for
from ..protocol.signing import sign_document, verify_parsed
from ..protocol.tables import (
    PROTOCOL_TABLES,
    GroupState,
    GroupTransition,
    LeaseTransition,
    StateTables,
)
from ..protocol.timestamps import Timestamp, format_utc, parse_timestamp
from . import archive, embedded, embedded_signatures, extensions, fences
from . import leases as leases_module
from .command import CommandView, Draft
from .config import AuthorityConfig
from .context import Context, Identity
from .evolve import evolve
from .handlers import HANDLERS
from .records import EventRecord, ReceiptRecord, RejectionRecord
from .state import AuthorityState

PROTOCOL_VERSION = "0.1"
LEASE_EXPIRED = ExtensionEventKind.LEASE_EXPIRED.value
_COMMAND_PROFILE = _profile_for("command")


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """An accepted Command: its receipt and the Events it appended (none for a retry).

    Events caused by a timer or policy rather than a Command have no receipt.
    """

    receipt: ReceiptRecord | None
    events: tuple[EventRecord, ...]
    duplicate: bool = False

    ok = True

    @property
    def event_documents(self) -> tuple[dict[str, Any], ...]:
        """The signed Event documents, a new copy on every read (parsed from the log rows'
        canonical text): the caller's to keep or change, never the Authority's."""
        return tuple(parse_strict(record.document) for record in self.events)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected:
    """A refused Command: the error and what the log keeps about it."""

    error: ProtocolError
    record: RejectionRecord

    ok = False


Outcome = Accepted | Rejected


def event_record(doc: dict[str, Any], from_state: str | None, to_state: str | None) -> EventRecord:
    """The typed log row of a signed Event document."""
    payload = doc["payload"]
    occurred_at = doc["occurredAt"]
    return EventRecord(
        event_id=doc["eventId"],
        group_id=doc.get("groupId"),
        sequence=doc.get("sequence"),
        aggregate_revision=doc.get("aggregateRevision"),
        kind=doc["kind"],
        occurred_at=occurred_at,
        occurred_at_us=parse_timestamp(occurred_at).epoch_micros,
        actor_type=doc["actor"]["type"],
        actor_id=doc["actor"]["id"],
        cause_type=doc["cause"]["type"],
        cause_id=doc["cause"]["id"],
        correlation_id=doc["correlationId"],
        work_item_id=doc.get("workItemId"),
        mission_id=payload.get("missionId") if isinstance(payload, dict) else None,
        payload_json=canonicalize(payload).decode("utf-8"),
        document=canonicalize(doc).decode("utf-8"),
        from_state=from_state,
        to_state=to_state,
    )


_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?")


def _supported_version(document: Any) -> None:
    """``UNSUPPORTED_VERSION`` for a Command of another protocol version (§19, §21): a
    well-formed version other than this Authority's; anything else is the schema's to judge."""
    version = document.get("protocolVersion") if isinstance(document, dict) else None
    if isinstance(version, str) and version != PROTOCOL_VERSION and _VERSION.fullmatch(version):
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"The Command is MWP {version}; this Group Authority speaks {PROTOCOL_VERSION} only "
            f"(the wire version of this specification). Send it as protocolVersion "
            f"{PROTOCOL_VERSION!r}; a change of version needs handshake negotiation.",
            details={"presented": version, "supported": [PROTOCOL_VERSION]},
            rule="§21 the wire protocolVersion is 0.1",
        )


def _internal(cmd: CommandView, exc: Exception) -> ProtocolError:
    """``INTERNAL_ERROR`` for an unexpected failure while deciding ``cmd`` (§19): the
    Authority's fault, not the sender's; nothing was accepted and nothing changed."""
    return ProtocolError(
        ErrorCode.INTERNAL_ERROR,
        f"The Group Authority failed while deciding this {cmd.kind} "
        f"({type(exc).__name__}: {str(exc)[:300]}). Nothing was accepted and nothing changed; "
        "this is a fault of the Authority, not of the Command, and the same Command may be "
        "sent again.",
        details={"exception": type(exc).__name__},
        rule="§19 the Authority failed without accepting the transition",
    )


@dataclass
class Authority:
    """The Group Authority of one sandbox Organization (all of its Groups)."""

    state: AuthorityState
    identity: Identity
    key_pair: SigningKeyPair
    config: AuthorityConfig = field(default_factory=AuthorityConfig)
    #: The state tables every decision and every fold follows (the specification's unless a
    #: caller gives another rule set).
    tables: StateTables = PROTOCOL_TABLES

    # ------------------------------------------------------------------ commands

    def handle(self, data: bytes | str, now: Timestamp) -> Outcome:
        """Decide one Command received as bytes at ``now``."""
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        document: Any = None
        try:
            document = parse_strict(raw)
            _supported_version(document)
            verified = verify_parsed(_COMMAND_PROFILE, document, self.state.registry)
            cmd = CommandView.from_document(verified.document, verified.signing_hash)
            duplicate = self._idempotent_retry(cmd)
            if duplicate is not None:
                return duplicate
            self._fresh(cmd, now)
            self._within_rate(cmd, now)
            try:
                with self.state.transaction():
                    return self._decide(cmd, now)
            except ProtocolError:
                raise
            except Exception as exc:  # the Authority's own fault; the transaction rolled back
                raise _internal(cmd, exc) from exc
        except ProtocolError as error:
            return Rejected(error=error, record=self._rejection(raw, document, error, now))

    def _idempotent_retry(self, cmd: CommandView) -> Accepted | None:
        receipt = self.state.receipts.get((cmd.actor_id, cmd.action_id))
        if receipt is None:
            return None
        if receipt.command_hash != cmd.signing_hash:
            raise ProtocolError(
                ErrorCode.ACTION_ID_COLLISION,
                f"Action ID {cmd.action_id} was already used by {cmd.actor_id} for a Command "
                "with different content. A new Command needs a new Action ID.",
                details={"actionId": cmd.action_id, "originalCommandHash": receipt.command_hash},
                rule="§15.1 idempotency by (actor, Action ID)",
            )
        return Accepted(receipt=receipt, events=(), duplicate=True)

    def _fresh(self, cmd: CommandView, now: Timestamp) -> None:
        age = now.epoch_micros - cmd.issued_at.epoch_micros
        if age > self.config.freshness_past_us or -age > self.config.freshness_future_us:
            raise ProtocolError(
                ErrorCode.AUTH_INVALID_SIGNATURE,
                f"The Command was issued at {cmd.issued_at.text}, outside the freshness window "
                f"around {now.text}: it is too {'old' if age > 0 else 'far in the future'}. "
                "Create a new Command with a new Action ID and a current issuedAt.",
                stage="freshness",
                reason="command-stale" if age > 0 else "command-from-future",
                rule="§6.4 bounded freshness and clock-skew window for issuedAt",
            )

    def _within_rate(self, cmd: CommandView, now: Timestamp) -> None:
        """The per-Principal rate policy (§20), when the configuration sets one: at most
        ``max_commands`` accepted Commands (of ``kinds``, if given) in any ``window_us``."""
        policy = self.config.rate_policy
        if policy is None or not policy.applies_to(
            cmd.actor_id, cmd.kind, self.identity.control_services
        ):
            return
        since = now.epoch_micros - policy.window_us
        recent = sorted(
            at
            for r in self.state.receipts.values()
            if r.actor_id == cmd.actor_id
            and policy.counts(r.kind)
            and (at := parse_timestamp(r.accepted_at).epoch_micros) > since
        )
        if len(recent) >= policy.max_commands:
            retry_at = recent[len(recent) - policy.max_commands] + policy.window_us
            raise ProtocolError(
                ErrorCode.RATE_LIMITED,
                f"{cmd.actor_id} had {len(recent)} Command(s) accepted in the last "
                f"{policy.window_us / 1e6:g} s; the Organization's rate policy allows "
                f"{policy.max_commands}. Nothing was accepted; send it again (a new Action ID "
                f"is not needed) from {format_utc(retry_at)}.",
                details={
                    "maxCommands": policy.max_commands,
                    "windowSeconds": policy.window_us / 1e6,
                    "retryAfter": format_utc(retry_at),
                },
                rule="§20 Organization policy limits Message and proposal rates",
            )

    def _decide(self, cmd: CommandView, now: Timestamp) -> Accepted:
        """Run the handler and append its Events."""
        spec = HANDLERS.get(cmd.kind)
        if spec is None:
            raise extensions.unknown_kind(cmd.kind)
        dependency = extensions.uninterpretable(cmd.document, spec.extensions)
        if dependency is not None:
            raise extensions.refuse(dependency, cmd.kind)
        if cmd.actor_type not in spec.actors:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"{cmd.kind} may be sent by {' or '.join(sorted(spec.actors))} actors, not by "
                f"a {cmd.actor_type}.",
                rule="§15.1 role of the actor",
            )
        ctx = self._context(now)
        ctx.command = cmd
        self._authenticate(ctx, cmd, spec.scope)
        if spec.scope == "group":
            group = ctx.group(cmd.group_id)
            # An archived Group accepts no Command: the Group table's row every Command needs.
            self.tables.group.lookup(
                GroupState(group.state), GroupTransition.RECORD_EVENT, subject=group.group_id
            )
            refusal = extensions.unpinned(cmd.kind, ctx.mission_of(cmd.group_id).document)
            if refusal is not None:
                raise refusal
        if spec.coordinator or (
            cmd.coordinator_epoch is not None and spec.scope == "group" and cmd.group_id
        ):
            fences.coordinator(ctx, cmd)
        if spec.cas and cmd.expected_revision is None:
            raise ProtocolError(
                ErrorCode.INVALID_COMMAND,
                f"{cmd.kind} is compare-and-set: it must carry expectedRevision.",
                rule="§15.3 compare-and-set is always required here",
            )
        if self._row_of(cmd.kind, spec.aggregate):
            # The row checks it, after the table (``decide``): a transition the table forbids
            # is refused as such even with a stale expectedRevision.
            ctx.revision_after_table = spec.aggregate
        else:
            self._check_revision(ctx, cmd, spec.aggregate)
        documents: list[dict[str, Any]] = []
        records: list[EventRecord] = []
        generator = spec.handler(ctx, cmd)
        try:
            draft = next(generator)
            while True:
                doc, record = self._append(draft, cmd, now)
                documents.append(doc)
                records.append(record)
                draft = generator.send(doc)
        except StopIteration:
            pass
        receipt = self._receipt(cmd, now, documents)
        self.state.put("receipts", (cmd.actor_id, cmd.action_id), receipt)
        return Accepted(receipt=receipt, events=tuple(records))

    def _authenticate(self, ctx: Context, cmd: CommandView, scope: str) -> None:
        if scope == "organization":
            if cmd.actor_id not in self.identity.control_services:
                raise ProtocolError(
                    ErrorCode.AUTH_FORBIDDEN,
                    f"{cmd.actor_id} is not an Organization service allowed to send {cmd.kind}.",
                    rule="§15.1 Organization-owned bootstrap Commands",
                )
            return
        if scope == "create":
            if cmd.group_id in self.state.groups:
                raise ProtocolError(
                    ErrorCode.INVALID_COMMAND,
                    f"Group {cmd.group_id} already exists; a creation Command names a new Group.",
                )
            if cmd.actor_type == "agent":
                fences.session(ctx, cmd)
            return
        ctx.group(cmd.group_id)
        if cmd.actor_type == "agent":
            fences.session(ctx, cmd)
        if cmd.actor_type in ("agent", "human"):
            fences.membership(ctx, cmd)
        elif cmd.actor_id not in self.identity.control_services:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"Service {cmd.actor_id} is not authorized by Organization policy here.",
                rule="§8 Organization-service Commands are authorized by policy",
            )

    def _row_of(self, kind: str, aggregate: str | None) -> bool:
        """Whether ``kind`` drives a row of the table of ``aggregate``."""
        if aggregate == "work_item":
            return self.tables.work_item.for_command(kind) is not None
        if aggregate == "mission":
            return self.tables.mission.for_command(kind) is not None
        return False

    def _check_revision(self, ctx: Context, cmd: CommandView, aggregate: str | None) -> None:
        if cmd.expected_revision is None or aggregate is None:
            return
        if aggregate == "mission":
            fences.revision(ctx.mission_of(cmd.group_id).revision, cmd, "the Mission")
        elif aggregate == "work_item":
            target = cmd.payload.get("workItemId", cmd.work_item_id)
            item = ctx.work_item(target, cmd.group_id)
            fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")

    # ------------------------------------------------------------------ events

    def _append(
        self, draft: Draft, cmd: CommandView | None, now: Timestamp
    ) -> tuple[dict[str, Any], EventRecord]:
        doc = self._event_document(draft, cmd, now)
        signed = sign_document("event", doc, self.key_pair, self.identity.authority_key_id)
        self.admit(signed)
        return signed, event_record(signed, draft.from_state, draft.to_state)

    def admit(self, event: dict[str, Any]) -> None:
        """Fold a signed Event into the state with the checks every Event gets, whether this
        Authority just decided it or it comes from a file (``GroupLog.import_events``): each
        Signed Document it embeds verifies by its expected signer (``embedded_signatures``), a
        Group Snapshot it records would archive the Group as it is (``archive.attested``), the
        state tables allow it (``evolve``), and every document it embeds, with the WorkItem
        it leaves, conforms to its schema (``embedded``). A refusal raises; the caller's
        transaction undoes whatever was folded."""
        embedded_signatures.check(event, self.state, self.identity)
        archive.attested(event, self.state, self.identity)
        evolve(self.state, event, self.tables)
        embedded.check(event, self.state)

    def _event_document(
        self, draft: Draft, cmd: CommandView | None, now: Timestamp
    ) -> dict[str, Any]:
        state = self.state
        doc: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION}
        if draft.group_id is None:
            position = int(state.meta.get("org_events", 0)) + 1
            doc["eventId"] = derived_uuid(self.identity.organization_id, "org", str(position))
        else:
            group = state.groups.get(draft.group_id)
            sequence = (group.last_sequence if group else 0) + 1
            doc["eventId"] = derived_uuid(
                self.identity.organization_id, draft.group_id, str(sequence)
            )
            doc["groupId"] = draft.group_id
            doc["sequence"] = sequence
            doc["aggregateRevision"] = self._next_revision(draft)
        doc["kind"] = str(draft.kind)
        doc["actor"] = draft.actor or (cmd.actor if cmd else self._authority_actor())
        if draft.cause is not None:
            doc["cause"] = {"type": draft.cause[0], "id": draft.cause[1]}
        elif cmd is not None:
            doc["cause"] = {"type": "command", "id": cmd.action_id}
        else:
            raise ValueError("an Event without a Command needs an explicit cause")
        doc["correlationId"] = cmd.correlation_id if cmd else doc["eventId"]
        if draft.conversation_id is not None:
            doc["conversationId"] = draft.conversation_id
        if draft.work_item_id is not None:
            doc["workItemId"] = draft.work_item_id
        doc["occurredAt"] = now.text
        doc["payload"] = draft.payload
        doc["acceptedBy"] = self._authority_actor()
        if cmd is not None and draft.cause is None:
            doc["commandHash"] = cmd.signing_hash
        if draft.extensions:
            doc["extensions"] = draft.extensions
        return doc

    def _next_revision(self, draft: Draft) -> int:
        state = self.state
        if draft.aggregate is not None:
            kind, key = draft.aggregate
            if kind == "work_item":
                item = state.work_items.get(key)
                return (item.revision if item else 0) + 1
            if kind == "mission":
                mission = state.missions.get(key)
                return (mission.revision if mission else 0) + 1
        group = state.groups.get(draft.group_id or "")
        if group is None:
            return 0
        mission = state.missions.get(group.mission_id)
        return mission.revision if mission else 0

    def _context(self, now: Timestamp) -> Context:
        return Context(
            state=self.state,
            now=now,
            config=self.config,
            identity=self.identity,
            tables=self.tables,
        )

    def _authority_actor(self) -> dict[str, str]:
        return {"type": "service", "id": self.identity.authority_id}

    def _receipt(
        self,
        cmd: CommandView,
        now: Timestamp,
        documents: list[dict[str, Any]],
    ) -> ReceiptRecord:
        body = {
            "actionId": cmd.action_id,
            "actor": cmd.actor,
            "kind": cmd.kind,
            "commandHash": cmd.signing_hash,
            "acceptedAt": now.text,
            "groupId": cmd.group_id,
            "events": [
                {"eventId": d["eventId"], "kind": d["kind"], "sequence": d.get("sequence")}
                for d in documents
            ],
        }
        return ReceiptRecord(
            actor_id=cmd.actor_id,
            action_id=cmd.action_id,
            command_hash=cmd.signing_hash,
            command_document=canonicalize(cmd.document).decode("utf-8"),
            kind=cmd.kind,
            group_id=cmd.group_id,
            accepted_at=now.text,
            event_ids=tuple(d["eventId"] for d in documents),
            receipt_json=canonicalize(body).decode("utf-8"),
        )

    def _rejection(
        self, raw: bytes, document: Any, error: ProtocolError, now: Timestamp
    ) -> RejectionRecord:
        doc: dict[str, Any] = document if isinstance(document, dict) else {}
        raw_actor = doc.get("actor")
        actor: dict[str, Any] = raw_actor if isinstance(raw_actor, dict) else {}
        raw_payload = doc.get("payload")
        payload: dict[str, Any] = raw_payload if isinstance(raw_payload, dict) else {}

        def text(value: Any) -> str | None:
            return value if isinstance(value, str) else None

        return RejectionRecord(
            received_at=now.text,
            actor_id=text(actor.get("id")),
            action_id=text(doc.get("actionId")),
            kind=text(doc.get("kind")),
            group_id=text(doc.get("groupId")),
            work_item_id=text(payload.get("workItemId")) or text(doc.get("workItemId")),
            code=error.code.value,
            explanation=error.explanation,
            rule=error.rule,
            stage=error.stage,
            reason=error.reason,
            details_json=json.dumps(error.details, sort_keys=True, default=str),
            command_text=raw.decode("utf-8", errors="replace"),
        )

    # ------------------------------------------------------------------ timers

    def expire(self, now: Timestamp) -> list[Accepted]:
        """Append a ``lease_expired`` Event (cause ``timer``) for every lease that ran out.

        Expiry is an Event, never silent state (§11.3); the WorkItem keeps its state, and its
        owner is no longer live, so the Coordinator may re-offer it (§11.5). Offer expiry, by
        contrast, appends nothing (§10.2).
        """
        ctx = self._context(now)
        due = sorted(
            (expires, lease_id)
            for lease_id, expires in self.state.active_leases.items()
            if expires <= now.epoch_micros
        )
        drafts = []
        for _expires, lease_id in due:
            lease = self.state.leases[lease_id]
            closed = leases_module.close(
                ctx, lease, LeaseTransition.EXPIRE, f"{lease.lease_type} lease ran out"
            )
            drafts.append(
                Draft(
                    kind=LEASE_EXPIRED,
                    group_id=lease.group_id,
                    work_item_id=lease.work_item_id,
                    cause=("timer", lease_id),
                    actor=self._authority_actor(),
                    payload={
                        "missionId": lease.mission_id,
                        "workItemId": lease.work_item_id,
                        "leaseId": lease_id,
                        "leaseType": lease.lease_type,
                        "holderAgentId": lease.holder_agent_id,
                        "leases": leases_module.documents(closed),
                    },
                )
            )
        return self.emit_automatic(drafts, now)

    def emit_automatic(self, drafts: list[Draft], now: Timestamp) -> list[Accepted]:
        """Append Events caused by timers or policy (no Command), one outcome per Event."""
        out: list[Accepted] = []
        for draft in drafts:
            with self.state.transaction():
                _, record = self._append(draft, None, now)
            out.append(Accepted(receipt=None, events=(record,)))
        return out
