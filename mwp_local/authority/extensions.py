"""Extension criticality (§17, §18, §19): which extensions a Command depends on, and which of
them this Group Authority can interpret.

An extension entry is ``{"version", "critical", "data"}`` under its profile URI, in the
``extensions`` member of the Command or of an object the Command carries in its payload (a Work
Contract, an Artifact manifest, a Message, ...). A *critical* entry says "do not act on this
without understanding me": if the Authority cannot interpret it, the Command is refused with
``UNKNOWN_CRITICAL_EXTENSION`` and nothing changes. A noncritical entry it does not know is kept
as sent: the Command document is stored with its receipt, an embedded object as it came.

The Command's own ``extensions`` are interpreted by its handler, which declares the profiles it
reads (``CommandSpec.extensions``: the bounded-offline binding of §11.5 on ``work.checkpoint``
and ``message.post``). Objects embedded in the payload have no profile this Authority reads.
The same rule holds for signed Events taken in from elsewhere (``GroupLog.import_events``): an
Event that depends on a critical profile this code cannot interpret cannot be replayed, so the
import is refused (§18: refuse a transition that depends on an unknown critical profile); the
Events that carry the §11.5 binding (``EVENT_PROFILES``) are the ones its Authority writes.

Kinds (§15, §18): a Command is a request for a transition, so a kind this Authority has no
handler for is always refused, with the code that tells the sender why. A kind of the protocol
itself (a core kind, or one of the reference core's ``ext.missionweaveprotocol.*`` kinds) or of
the sandbox's own profile (``ext.mwp-local.sandbox.*``) that is not implemented is no extension
the Authority could be missing: it is not a kind of that vocabulary at all, so it is
``INVALID_COMMAND``, as the reference implementation answers it (a name this sandbox used before
taking the reference's names is answered with the name to use). A kind of any other
``ext.<organization>.<profile>`` namespace belongs to an Extension Profile this Authority does
not implement and no Group here pins: the transition depends on it and cannot be interpreted,
so it is ``UNKNOWN_CRITICAL_EXTENSION`` (§18: refuse a transition that depends on an unknown
critical profile). ``unknown_event`` applies the same split to imported Events: an Event whose
kind this code does not know cannot be folded faithfully, whatever its namespace.
Pure code: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.documents.kinds import (
    EVENT_KINDS,
    FORMER_KINDS,
    REFERENCE_NAMESPACE,
    SANDBOX_NAMESPACE,
)
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.profiles import PROFILES, ProfileDefinition
from .offline import BOUNDED_OFFLINE

_RULE = "§17 unknown critical extensions; §18 refuse a transition that depends on one"

#: Event kind → the profiles of the Event's own ``extensions`` this code understands: the
#: Authority copies the bounded-offline binding of a reconciled Command onto its Event.
EVENT_PROFILES: Mapping[str, frozenset[str]] = {
    "work.checkpointed": frozenset({BOUNDED_OFFLINE}),
    "message.posted": frozenset({BOUNDED_OFFLINE}),
}


@dataclass(frozen=True, slots=True)
class Dependency:
    """One critical extension a Command or Event depends on: where it sits and what it names."""

    path: tuple[str | int, ...]
    uri: str
    version: Any

    @property
    def where(self) -> str:
        """The path as text: ``extensions``, ``payload.contract.extensions``, ..."""
        text = ""
        for step in self.path:
            text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
        return text

    def __str__(self) -> str:
        return f"the critical extension {self.uri} (version {self.version}, at {self.where})"


def uninterpretable(document: Mapping[str, Any], understood: frozenset[str]) -> Dependency | None:
    """The first critical extension of ``document`` (a verified Command or Event) that this code
    cannot interpret: at the top level one not in ``understood``, in the payload any."""
    found = _critical(document.get("extensions"), ("extensions",), understood)
    if found is None:
        found = _walk(document.get("payload"), ("payload",))
    return found


def refuse(dependency: Dependency, kind: str) -> ProtocolError:
    """``UNKNOWN_CRITICAL_EXTENSION`` for ``dependency`` on a Command of ``kind``."""
    return ProtocolError(
        ErrorCode.UNKNOWN_CRITICAL_EXTENSION,
        f"The {kind} Command depends on {dependency}, which this Group Authority "
        f"cannot interpret for {kind}. A critical extension must be understood before the "
        "transition it belongs to is applied; nothing was changed. Leave the extension out, "
        "mark it noncritical if the transition is correct without it, or send the Command to "
        "an Authority whose Group pins that Extension Profile.",
        details={"extension": dependency.uri, "at": dependency.where},
        rule=_RULE,
    )


def _vocabulary(kind: str) -> str | None:
    """Which vocabulary this code knows completely ``kind`` is spelled in (None: another
    Organization's profile)."""
    if kind.startswith(REFERENCE_NAMESPACE):
        return "the MissionWeaveProtocol 0.1 reference core (ext.missionweaveprotocol.*)"
    if kind.startswith(SANDBOX_NAMESPACE):
        return "the sandbox's Extension Profile (ext.mwp-local.sandbox.*)"
    if not kind.startswith("ext."):
        return "the MissionWeaveProtocol 0.1 core"
    return None


def _former(kind: str) -> str:
    renamed = FORMER_KINDS.get(kind)
    if renamed is None:
        return ""
    return f" This sandbox once used that name; the kind is now {renamed}."


def unknown_kind(kind: str) -> ProtocolError:
    """The refusal of a Command of ``kind``, which no handler here implements (see the module
    docstring for which code and why)."""
    vocabulary = _vocabulary(kind)
    if vocabulary is not None:
        return ProtocolError(
            ErrorCode.INVALID_COMMAND,
            f"{kind!r} is not a Command kind of {vocabulary}, so this Group Authority has no "
            f"transition for it; nothing was changed.{_former(kind)}",
            details={"kind": kind, **({"use": FORMER_KINDS[kind]} if kind in FORMER_KINDS else {})},
            rule="§15.1 core Command kinds and the reference core's Organization-owned Commands",
        )
    return ProtocolError(
        ErrorCode.UNKNOWN_CRITICAL_EXTENSION,
        f"{kind!r} belongs to an Extension Profile this Group Authority does not implement and "
        "no Group here pins. A Command asks for a transition, and a transition that depends on "
        "an extension the Authority cannot interpret is refused; nothing was changed.",
        details={"kind": kind},
        rule=_RULE,
    )


def profile_of(kind: str) -> ProfileDefinition | None:
    """The sandbox Extension Profile that declares Command ``kind`` (None: a protocol kind)."""
    return next((p for p in PROFILES.values() if kind in p.command_kinds), None)


def unpinned(kind: str, mission: Mapping[str, Any]) -> ProtocolError | None:
    """``UNKNOWN_CRITICAL_EXTENSION`` when a Command of ``kind`` belongs to a profile the
    Mission's Group does not pin (§18: a Group pins the profiles it uses), else None."""
    profile = profile_of(kind)
    if profile is None or profile.pin() in mission.get("pinnedProfiles", ()):
        return None
    return ProtocolError(
        ErrorCode.UNKNOWN_CRITICAL_EXTENSION,
        f"{kind} belongs to the Extension Profile {profile.uri} (major version {profile.major}), "
        f"which Mission {mission.get('missionId')} does not pin: its Group does not use that "
        "profile, so the transition cannot be interpreted there. Nothing was changed.",
        details={"kind": kind, "profile": profile.uri, "majorVersion": profile.major},
        rule="§18 a Group pins the supported major versions of profiles it uses",
    )


def unknown_event(kind: str) -> ProtocolError | None:
    """The refusal of an Event of ``kind`` taken in from elsewhere that this code cannot fold
    (None when it can): the split ``unknown_kind`` makes for Commands. A kind of the protocol
    that no fold here reads (one this sandbox never appends) cannot be replayed, and a kind of
    a vocabulary this code knows completely that is not one of its kinds records no transition
    at all (both ``PROTOCOL_VIOLATION``); a kind of any other Extension Profile records a
    transition this code cannot interpret (``UNKNOWN_CRITICAL_EXTENSION``). Either way nothing
    is folded: an Event taken in as a no-op would claim a history nobody checked."""
    from .evolve import REDUCERS  # the folds, registered once the reducers are imported

    if kind in EVENT_KINDS:
        if kind in REDUCERS:
            return None
        return ProtocolError(
            ErrorCode.PROTOCOL_VIOLATION,
            f"{kind!r} is an Event kind of the protocol that this sandbox does not implement: "
            "no Command here appends it and no fold reads it, so it cannot replay the "
            "transition it records.",
            details={"kind": kind},
            rule="§15 every Event records a transition its Authority implements",
        )
    vocabulary = _vocabulary(kind)
    if vocabulary is not None:
        return ProtocolError(
            ErrorCode.PROTOCOL_VIOLATION,
            f"{kind!r} is not an Event kind of {vocabulary}, so it records no transition this "
            f"sandbox could replay.{_former(kind)}",
            details={"kind": kind},
            rule="§15 every Event records a transition of its vocabulary",
        )
    return ProtocolError(
        ErrorCode.UNKNOWN_CRITICAL_EXTENSION,
        f"{kind!r} belongs to an Extension Profile this sandbox does not implement, so it "
        "cannot interpret the transition the Event records, nor replay it.",
        details={"kind": kind},
        rule=_RULE,
    )


def _critical(
    extensions: Any, path: tuple[str | int, ...], understood: frozenset[str]
) -> Dependency | None:
    if not isinstance(extensions, dict):
        return None
    for uri, entry in extensions.items():
        if isinstance(entry, dict) and entry.get("critical") is True and uri not in understood:
            return Dependency(path, uri, entry.get("version"))
    return None


_NOTHING: frozenset[str] = frozenset()


def _walk(value: Any, path: tuple[str | int, ...]) -> Dependency | None:
    """The first critical extension in an embedded object, depth first, never looking inside
    an extension's own (opaque) data."""
    if isinstance(value, dict):
        found = _critical(value.get("extensions"), (*path, "extensions"), _NOTHING)
        if found is not None:
            return found
        for key, child in value.items():
            if key != "extensions" and isinstance(child, dict | list):
                found = _walk(child, (*path, key))
                if found is not None:
                    return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            if isinstance(child, dict | list):
                found = _walk(child, (*path, index))
                if found is not None:
                    return found
    return None


__all__ = [
    "EVENT_PROFILES",
    "Dependency",
    "profile_of",
    "refuse",
    "uninterpretable",
    "unknown_event",
    "unknown_kind",
    "unpinned",
]
