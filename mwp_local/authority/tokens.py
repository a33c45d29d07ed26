"""Capability tokens of the Authorization Service (§12, MWP-WRK-014), pure code.

A token is a short-lived, least-privilege bearer credential bound to the Worker Agent and its
current Session Epoch, the WorkItem and its Ownership Epoch, and the current Execution Lease ID;
it names the allowed operations and resources and carries limits capped by both the Work
Contract and the authoritative remaining budget. It expires no later than its lease. Tokens bind
to the lease, not the reverse, so a token can be rotated or narrowed while one lease stays
active; when the lease is released, expires or is revoked, every token bound to it stops
working at once. Tokens are never written to Events, Messages or the log: the sandbox hands them
to the Worker directly.

The bearer value is an HMAC over the token's claims with a key only the Authorization Service
holds, so a token cannot be forged or widened by its holder.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..protocol.b64 import b64url_encode
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.jcs import canonicalize
from .model import LIMIT_MEMBER
from .state import AuthorityState


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityToken:
    """A bearer capability and the claims it was issued for."""

    token_id: str
    agent_id: str
    session_epoch: int
    work_item_id: str
    ownership_epoch: int
    lease_id: str
    operations: tuple[str, ...]
    resources: tuple[str, ...]
    limits: tuple[tuple[str, float], ...]
    issued_us: int
    expires_us: int
    value: str

    def __repr__(self) -> str:  # never print the bearer value by accident
        return (
            f"CapabilityToken({self.token_id}, lease={self.lease_id}, "
            f"operations={list(self.operations)}, expires_us={self.expires_us})"
        )


class AuthorizationService:
    """Issues and checks capability tokens against the Authority's current state."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._issued = 0

    def _sign(self, claims: dict[str, object]) -> str:
        mac = hmac.new(self._key, canonicalize(claims), hashlib.sha256).digest()
        return b64url_encode(mac)

    @staticmethod
    def _claims(token: CapabilityToken) -> dict[str, object]:
        return {
            "tokenId": token.token_id,
            "agentId": token.agent_id,
            "sessionEpoch": token.session_epoch,
            "workItemId": token.work_item_id,
            "ownershipEpoch": token.ownership_epoch,
            "leaseId": token.lease_id,
            "operations": list(token.operations),
            "resources": list(token.resources),
            "limits": [[d, v] for d, v in token.limits],
            "issuedUs": token.issued_us,
            "expiresUs": token.expires_us,
        }

    def issue(
        self,
        state: AuthorityState,
        *,
        agent_id: str,
        lease_id: str,
        now_us: int,
        operations: Iterable[str] | None = None,
        lifetime_us: int | None = None,
    ) -> CapabilityToken:
        """A token for the holder of a live Execution Lease (narrowed to ``operations``)."""
        lease = state.leases.get(lease_id)
        if lease is None or lease.lease_type != "execution" or not lease.live_at(now_us):
            raise ProtocolError(
                ErrorCode.WORK_LEASE_EXPIRED,
                f"No live Execution Lease {lease_id}: tokens are issued only under one.",
                rule="§12 tokens are bound to the current Execution Lease",
            )
        item = state.work_items[lease.work_item_id or ""]
        if lease.holder_agent_id != agent_id or item.execution_lease_id != lease_id:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"{agent_id} does not hold the current Execution Lease of {item.work_item_id}.",
                rule="§12 the Coordinator may not obtain or forward a Worker's credential",
            )
        contract = item.contract
        granted = tuple(
            sorted({op for grant in contract["allowedResources"] for op in grant["operations"]})
        )
        resources = tuple(sorted(grant["resource"] for grant in contract["allowedResources"]))
        wanted = tuple(sorted(set(operations))) if operations is not None else granted
        if not set(wanted) <= set(granted):
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"Operations {sorted(set(wanted) - set(granted))} are not allowed by the Work "
                "Contract; a token can only be narrowed, never widened.",
                rule="§12 least privilege",
            )
        ledger = state.budgets[("work_item", item.work_item_id)]
        limits = []
        for dim in LIMIT_MEMBER:
            remaining = ledger.remaining(dim)
            if remaining is not None:
                limits.append((dim, float(remaining)))
        expires = lease.expires_us
        if lifetime_us is not None:
            expires = min(expires, now_us + lifetime_us)
        self._issued += 1
        unsigned = CapabilityToken(
            token_id=f"urn:mwp-local:token:{lease_id.rsplit(':', 1)[-1]}:{self._issued}",
            agent_id=agent_id,
            session_epoch=lease.session_epoch,
            work_item_id=item.work_item_id,
            ownership_epoch=item.ownership_epoch,
            lease_id=lease_id,
            operations=wanted,
            resources=resources,
            limits=tuple(limits),
            issued_us=now_us,
            expires_us=expires,
            value="",
        )
        return replace(unsigned, value=self._sign(self._claims(unsigned)))

    def check(
        self, state: AuthorityState, token: CapabilityToken, *, now_us: int, operation: str
    ) -> None:
        """Refuse a forged, expired, stale or out-of-scope token with its section-19 code."""
        if not hmac.compare_digest(token.value, self._sign(self._claims(token))):
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                "The capability token was not issued by this Authorization Service (or was "
                "altered).",
                rule="§12 tokens are issued by the Authorization Service",
            )
        if now_us >= token.expires_us:
            raise ProtocolError(
                ErrorCode.WORK_LEASE_EXPIRED,
                f"Capability token {token.token_id} has expired.",
                rule="§12 expired tokens are rejected",
            )
        lease = state.leases.get(token.lease_id)
        item = state.work_items.get(token.work_item_id)
        if lease is None or not lease.live_at(now_us) or item is None:
            raise ProtocolError(
                ErrorCode.WORK_LEASE_EXPIRED,
                f"The Execution Lease {token.lease_id} behind this token is no longer active "
                f"({lease.state if lease else 'unknown'}): the token died with it.",
                rule="§11.3 tokens expire no later than their lease",
            )
        if item.ownership_epoch != token.ownership_epoch:
            raise ProtocolError(
                ErrorCode.WORK_STALE_OWNERSHIP,
                f"The token was issued under Ownership Epoch {token.ownership_epoch}; the item "
                f"is now at {item.ownership_epoch}.",
            )
        agent = state.agents.get(token.agent_id)
        if agent is None or agent.session_epoch != token.session_epoch:
            raise ProtocolError(
                ErrorCode.AUTH_STALE_SESSION,
                f"The token was issued to Session Epoch {token.session_epoch}, which was replaced.",
            )
        if operation not in token.operations:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                f"Operation {operation!r} is outside this token's scope {list(token.operations)}.",
                rule="§12 least privilege",
            )
