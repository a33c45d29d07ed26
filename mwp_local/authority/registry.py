"""The handler registry: Command kind → how to fence it and which handler decides it.

Handler modules register themselves with ``@command(...)``; the pipeline looks the kind up once.
There is no if-chain over kinds anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..protocol.documents.kinds import CommandKind, ExtensionCommandKind
from .context import Handler


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandSpec:
    """How the pipeline treats one Command kind.

    ``scope``: ``"group"`` (an existing Group), ``"create"`` (creates the Group it names) or
    ``"organization"`` (no Group). ``actors``: allowed actor types. ``aggregate``: which
    aggregate ``expectedRevision`` refers to (``"work_item"``, ``"mission"`` or None).
    ``cas``: compare-and-set is mandatory (§15.3): the Command must carry ``expectedRevision``.
    ``coordinator``: only the current Coordinator may send it (the Coordinator Epoch is fenced).
    ``extensions``: the profile URIs of the Command's own ``extensions`` the handler interprets;
    any other critical one is refused (``authority.extensions``).
    """

    kind: CommandKind | ExtensionCommandKind
    handler: Handler
    scope: str
    actors: frozenset[str]
    aggregate: str | None = None
    cas: bool = False
    coordinator: bool = False
    extensions: frozenset[str] = frozenset()


_HANDLERS: dict[str, CommandSpec] = {}
#: Command kind → its spec (keyed by the kind's wire value; look up with the plain string).
HANDLERS: Mapping[str, CommandSpec] = MappingProxyType(_HANDLERS)


def command(
    kind: CommandKind | ExtensionCommandKind,
    *,
    scope: str = "group",
    actors: tuple[str, ...] = ("agent",),
    aggregate: str | None = None,
    cas: bool = False,
    coordinator: bool = False,
    extensions: tuple[str, ...] = (),
) -> Callable[[Handler], Handler]:
    """Register the decorated generator as the handler of ``kind``."""

    def register(handler: Handler) -> Handler:
        if kind in _HANDLERS:
            raise ValueError(f"two handlers for {kind}")
        _HANDLERS[kind] = CommandSpec(
            kind=kind,
            handler=handler,
            scope=scope,
            actors=frozenset(actors),
            aggregate=aggregate,
            cas=cas,
            coordinator=coordinator,
            extensions=frozenset(extensions),
        )
        return handler

    return register
