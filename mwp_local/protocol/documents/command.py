"""``command.schema.json``: the signed Command envelope (section 15.1).

Owns the Command shape, including the ten conditional rules that tie the actor type and the kind to
the Group ID and the Session, Membership and Coordinator Epochs. It checks structure only: whether
the epochs are *current*, the actor authorized or the signature valid is decided elsewhere. It must
not perform I/O.
"""

from __future__ import annotations

from typing import Final

from .common import (
    ACTOR,
    AGENT_ACTOR,
    EXTENSIONS,
    HUMAN_ACTOR,
    ID,
    POSITIVE_INTEGER,
    PROTOCOL_VERSION_SHAPE,
    SAFE_INTEGER,
    SIGNATURE,
    TIMESTAMP,
    ActorType,
)
from .kinds import (
    COORDINATOR_ONLY_KINDS,
    EXTENSION_KIND_PATTERN,
    GROUP_CREATING_KINDS,
    ORGANIZATION_SCOPED_COMMAND_KINDS,
    CommandKind,
)
from .shapes import Const, Enum, Shape, Str
from .structures import FREE_OBJECT, AllOf, AnyOf, Forbids, Has, If, Not, Obj, Where

__all__ = ["COMMAND", "EXTENSION_KIND", "CommandKind"]

#: An extension kind: ``ext.`` and at least three dotted lower-case segments.
EXTENSION_KIND: Final = Str(
    pattern=EXTENSION_KIND_PATTERN,
    max_len=160,
    hint="an extension kind 'ext.<owner>.<profile>.<name>'",
)
CORE_COMMAND_KIND: Final = Enum.of(CommandKind, what="core Command kinds")
_ORGANIZATION_SCOPED: Final = Enum(*ORGANIZATION_SCOPED_COMMAND_KINDS)
_COORDINATOR_ONLY: Final = Enum(*COORDINATOR_ONLY_KINDS)
_EPOCHS_OF_A_MEMBER: Final = ("membershipEpoch", "coordinatorEpoch")


def _actor_is(actor_type: ActorType) -> Where:
    return Has(actor=Has(type=Const(actor_type)))


def _kind_is(kind: str) -> Where:
    return Has(kind=Const(kind))


def _issued_by_human_before_membership(kind: CommandKind) -> If:
    return If(
        _kind_is(kind),
        then=AllOf(Where({"actor": HUMAN_ACTOR}), Forbids(*_EPOCHS_OF_A_MEMBER)),
        then_why=f"{kind.value} is issued by a human before the Group's Membership exists",
    )


COMMAND_RULES: Final[tuple[Shape, ...]] = (
    If(
        _kind_is(CommandKind.MISSION_TERMINATE),
        then=Where({"actor": Where({"type": Enum("agent", "service")}, required=["type"])}),
        then_why="mission.terminate is issued by the Coordinator or an Organization service",
    ),
    If(
        _actor_is(ActorType.AGENT),
        then=Where(required=["groupId", "sessionEpoch", "membershipEpoch"]),
        then_why="an Agent Command carries its Group ID, Session Epoch and Membership Epoch",
        otherwise=Forbids("sessionEpoch"),
        else_why="only an Agent Command carries a Session Epoch",
    ),
    If(
        _actor_is(ActorType.SERVICE),
        then=Forbids(*_EPOCHS_OF_A_MEMBER),
        then_why="an Organization service does not invent Membership or Coordinator Epochs",
    ),
    If(
        Has(kind=CORE_COMMAND_KIND),
        then=Where(required=["groupId"]),
        then_why="a core Command is scoped to a Group",
    ),
    If(
        Has(
            actor=Has(type=Const(ActorType.HUMAN)),
            kind=Not(Enum(*GROUP_CREATING_KINDS), message="is a Group-creating kind"),
        ),
        then=Where(required=["groupId", "membershipEpoch"]),
        then_why="a human Command in an existing Group carries its Membership Epoch",
    ),
    _issued_by_human_before_membership(CommandKind.MISSION_CREATE),
    _issued_by_human_before_membership(CommandKind.MISSION_CREATE_FOLLOW_UP),
    If(
        Has(kind=_ORGANIZATION_SCOPED),
        then=AllOf(
            Where({"actor": Where({"type": Const(ActorType.SERVICE)}, required=["type"])}),
            Forbids("groupId", "sessionEpoch", *_EPOCHS_OF_A_MEMBER),
        ),
        then_why="an Organization bootstrap Command is issued by a service outside any Group",
    ),
    If(
        Has(kind=_COORDINATOR_ONLY),
        then=AllOf(Where({"actor": AGENT_ACTOR}), Where(required=["coordinatorEpoch"])),
        then_why="this kind derives its authority from the current Coordinator lease",
    ),
    If(
        Has(actor=Has(type=Const(ActorType.AGENT)), kind=Const(CommandKind.MISSION_TERMINATE)),
        then=Where(required=["coordinatorEpoch"]),
        then_why="an Agent-issued mission.terminate carries the Coordinator Epoch",
    ),
)

COMMAND: Final = Obj(
    {
        "protocolVersion": PROTOCOL_VERSION_SHAPE,
        "actionId": ID,
        "actor": ACTOR,
        "kind": AnyOf(
            CORE_COMMAND_KIND,
            EXTENSION_KIND,
            expect="a core Command kind (section 15.1) or an extension kind 'ext.<a>.<b>.<c>'",
        ),
        "correlationId": ID,
        "issuedAt": TIMESTAMP,
        "payload": FREE_OBJECT,
        "signature": SIGNATURE,
    },
    {
        "sessionEpoch": POSITIVE_INTEGER,
        "membershipEpoch": POSITIVE_INTEGER,
        "coordinatorEpoch": POSITIVE_INTEGER,
        "groupId": ID,
        "conversationId": ID,
        "workItemId": ID,
        "cooperationOverrideGrantId": ID,
        "expectedRevision": SAFE_INTEGER,
        "causedByEventId": ID,
        "extensions": EXTENSIONS,
    },
    rules=COMMAND_RULES,
)
