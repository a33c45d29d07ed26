"""What a handler may read while deciding: the state, the verified Command, the time, policy.

Handlers are pure: they read through a ``Context`` and yield ``Draft`` Events; they never write
state, read clocks or draw random numbers. New identifiers are derived deterministically from the
Command's signing hash, so the same Commands always produce the same log.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.tables import PROTOCOL_TABLES, StateTables
from ..protocol.timestamps import Timestamp, format_utc
from .command import CommandView, Draft
from .config import AuthorityConfig
from .model import GroupRecord, MissionRecord, WorkItemRecord
from .state import AuthorityState

#: A handler: a generator of Drafts; the pipeline sends each accepted Event document back.
Handler = Callable[["Context", CommandView], Generator[Draft, dict[str, Any], None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """Who the Authority is and which Organization services it trusts.

    ``control_services`` may issue Organization-scoped Commands (Agent Card registration,
    Session opening), act as Organization policy (service-issued terminate, cancel) and archive
    Groups. ``profiles`` are the URIs of the Extension Profiles the Organization approved and
    this Authority implements (``protocol.profiles``): every Group it creates pins them (§18).
    """

    organization_id: str
    authority_id: str
    authority_key_id: str
    control_services: frozenset[str] = field(default_factory=frozenset)
    profiles: tuple[str, ...] = ()


@dataclass(slots=True)
class Context:
    """Read access for handlers: state, the Command's time, policy, identity, and the state
    tables the decision follows."""

    state: AuthorityState
    now: Timestamp
    config: AuthorityConfig
    identity: Identity
    tables: StateTables = PROTOCOL_TABLES
    command: CommandView | None = None
    #: The aggregate (``"work_item"`` or ``"mission"``) whose ``expectedRevision`` check the
    #: pipeline left to the Command's table row, to run after the table (``decide``).
    revision_after_table: str | None = None
    _counter: int = 0

    @property
    def now_us(self) -> int:
        """The current instant in microseconds."""
        return self.now.epoch_micros

    def at(self, micros: int) -> str:
        """Spell an instant as a protocol timestamp."""
        return format_utc(micros)

    def new_id(self, label: str) -> str:
        """A fresh identifier for something this Command creates (deterministic)."""
        self._counter += 1
        basis = self.command.signing_hash if self.command else self.now.text
        return derived_uuid(self.identity.organization_id, basis, label, str(self._counter))

    # ------------------------------------------------------------------ lookups

    def group(self, group_id: str | None) -> GroupRecord:
        """The Group, or ``GROUP_NOT_FOUND``."""
        group = self.state.groups.get(group_id or "")
        if group is None:
            raise ProtocolError(
                ErrorCode.GROUP_NOT_FOUND,
                f"There is no Group {group_id!r} (or it is not disclosed to you).",
                rule="§17.2 Groups are disclosed only to members",
            )
        return group

    def mission_of(self, group_id: str | None) -> MissionRecord:
        """The Mission that owns the Group."""
        return self.state.missions[self.group(group_id).mission_id]

    def work_item(self, work_item_id: Any, group_id: str | None) -> WorkItemRecord:
        """A WorkItem of this Group, or ``INVALID_COMMAND`` naming what is missing."""
        if not isinstance(work_item_id, str):
            raise invalid("The Command does not name a WorkItem (workItemId).")
        item = self.state.work_items.get(work_item_id)
        if item is None or item.group_id != group_id:
            raise invalid(f"There is no WorkItem {work_item_id!r} in this Group.")
        return item


def invalid(explanation: str, rule: str | None = None, **details: Any) -> ProtocolError:
    """``INVALID_COMMAND``: well-formed, but semantically wrong."""
    return ProtocolError(ErrorCode.INVALID_COMMAND, explanation, details=details, rule=rule)


def forbidden(explanation: str, rule: str | None = None, **details: Any) -> ProtocolError:
    """``AUTH_FORBIDDEN``: the actor lacks the role or policy eligibility."""
    return ProtocolError(ErrorCode.AUTH_FORBIDDEN, explanation, rule=rule, details=details)


def payload_field(cmd: CommandView, name: str, kind: type | tuple[type, ...] = str) -> Any:
    """A required payload member of the given JSON type, or ``INVALID_COMMAND``."""
    value = cmd.payload.get(name)
    if value is None or not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise invalid(f"The payload of {cmd.kind} needs '{name}'.", member=name)
    return value
