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
Pure code: no I/O, no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
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


__all__ = ["EVENT_PROFILES", "Dependency", "refuse", "uninterpretable"]
