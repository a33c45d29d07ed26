"""A simulated external tool service: where a Worker slot's side effects land (§11.4, §12, §16).

It performs an operation only for a capability token the Group's Authorization Service accepts
for that operation *and* for the WorkItem the call targets (a token bound to another slot's
WorkItem is refused), and at most once per idempotency key: a repeated key whose operation
succeeded is answered from the record without a second side effect (MWP-WRK-018, 031). Every
call is recorded, so tests can count attempts and keys. Tokens are never stored or printed.

The answer of a performed operation is the call's ``simulated_failure`` (the Worker's seeded
behaviour model stands in for a real tool), unless a test injects ``fail``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..agents.worker.slots import ExternalCall
from ..authority.tokens import CapabilityToken
from ..protocol.errors import ErrorCode, ProtocolError


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRecord:
    """One call received (the token itself is not kept)."""

    agent_id: str
    slot_id: str
    work_item_id: str
    operation: str
    idempotency_key: str
    attempt: int
    at_us: int
    #: ``performed``, ``duplicate`` (answered from the record) or ``refused``.
    outcome: str
    ok: bool
    #: The section-19 code of a refusal.
    code: str | None = None


#: ``check(token, operation, work_item_id, now_us)`` raises ``ProtocolError`` to refuse.
TokenCheck = Callable[[CapabilityToken, str, str, int], None]


@dataclass
class ExternalSystem:
    """Performs external operations once per key, for valid tokens only."""

    check: TokenCheck
    #: Optional failure injection: ``fail(call)`` True makes a performed operation fail.
    fail: Callable[[ExternalCall], bool] | None = None
    calls: list[CallRecord] = field(default_factory=list)
    _done: dict[str, bool] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def perform(self, agent_id: str, call: ExternalCall, now_us: int) -> CallRecord:
        """Check the token, then perform the operation (or answer a repeated key)."""
        with self._lock:
            record = self._perform(agent_id, call, now_us)
            self.calls.append(record)
            return record

    def _perform(self, agent_id: str, call: ExternalCall, now_us: int) -> CallRecord:
        def record(outcome: str, ok: bool, code: str | None = None) -> CallRecord:
            return CallRecord(
                agent_id=agent_id,
                slot_id=call.slot_id,
                work_item_id=call.work_item_id,
                operation=call.operation,
                idempotency_key=call.idempotency_key,
                attempt=call.attempt,
                at_us=now_us,
                outcome=outcome,
                ok=ok,
                code=code,
            )

        try:
            if call.token.agent_id != agent_id:
                raise ProtocolError(
                    ErrorCode.AUTH_FORBIDDEN, "The token was issued to another Agent."
                )
            self.check(call.token, call.operation, call.work_item_id, now_us)
        except ProtocolError as exc:
            return record("refused", False, exc.code.value)
        if self._done.get(call.idempotency_key):
            return record("duplicate", True)
        ok = not (self.fail(call) if self.fail is not None else call.simulated_failure)
        self._done[call.idempotency_key] = ok
        return record("performed", ok)

    def performed(self, work_item_id: str | None = None) -> list[CallRecord]:
        """The calls that were performed (not refused, not answered from the record)."""
        return [
            c
            for c in self.calls
            if c.outcome == "performed" and (work_item_id is None or c.work_item_id == work_item_id)
        ]

    def effects(self) -> dict[str, int]:
        """Side effects that took place, per idempotency key (Mission, WorkItem, Ownership Epoch
        and logical operation): each must be 1, however often a key was sent (MWP-WRK-031)."""
        out: dict[str, int] = {}
        for c in self.calls:
            if c.outcome == "performed" and c.ok:
                out[c.idempotency_key] = out.get(c.idempotency_key, 0) + 1
        return out


def token_check_for(
    check_token: Callable[[CapabilityToken, str, int], None],
) -> TokenCheck:
    """A ``TokenCheck`` that first refuses a token bound to another WorkItem than the target,
    then asks the Authorization Service (``check_token(token, operation, now_us)``)."""

    def check(token: CapabilityToken, operation: str, work_item_id: str, now_us: int) -> None:
        if token.work_item_id != work_item_id:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"Capability token {token.token_id} is bound to WorkItem {token.work_item_id}, "
                f"not to {work_item_id}.",
                rule="§12 a token is bound to one WorkItem and its Execution Lease",
            )
        check_token(token, operation, now_us)

    return check
