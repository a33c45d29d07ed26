"""The strict import (``mwp-local import``): signed Events from a file, taken in only as the live
Group Authority would have appended them (§16, §6.4; issue 26 point 5).

Each line of the file is one signed Event. ``admit_lines`` checks them in file order against the
Authority's state, folding each one so the next is judged after it:

1. it parses (strict JSON) and is not an Event ID the log already holds or the file repeats;
2. its own signature verifies (the six stages of §6.4) against the Registry as it stands there,
   by a Group Authority this Organization trusts;
3. its kind is one this code folds (``extensions.unknown_event``: an unknown kind or an
   Extension Profile's kind is refused, never taken in as a no-op) and it depends on no
   critical extension this code cannot interpret;
4. in a Group, its sequence follows the Group's last one (no gap, no repeat);
5. ``Authority.admit``, the live Authority's own path for every Event it appends: the Signed
   Documents it embeds verify by their expected signers, the state tables allow it, the
   documents it embeds conform to their schemas.

The first line that fails refuses the whole file with ``ImportRefused``: the section-19 code,
the line, the Event ID and kind, and what was wrong; the caller rolls the state back and writes
nothing.

A file may begin with the log's own Events, byte for byte and in order: the export of a sandbox
of the same Organization starts with the bootstrap Events every fresh sandbox of that seed writes
(Agent Cards, Sessions). That leading copy is recognized as already held and skipped, and the
rest continues the log. Any other Event ID the log holds is a duplicate and refuses the file, as
does a file that holds nothing the log does not (importing a log's own export into itself).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..authority.extensions import EVENT_PROFILES, uninterpretable, unknown_event
from ..authority.pipeline import Authority, event_record
from ..authority.records import EventRecord
from ..authority.reducers import ReplayError
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for, verify_parsed

__all__ = ["Admitted", "ImportRefused", "admit_lines"]

_RULE = "§16 an imported log is taken in only as its Group Authority appended it"


class ImportRefused(ProtocolError):
    """The file was refused at one line; nothing of it was imported."""

    def __init__(
        self, error: ProtocolError, line: int, event_id: str | None, kind: str | None
    ) -> None:
        where = f"line {line}"
        if event_id is not None:
            where += f" (Event {event_id}, {kind})"
        super().__init__(
            error.code,
            f"{where}: {error.explanation}",
            details={"line": line, "eventId": event_id, "kind": kind, **error.details},
            rule=error.rule or _RULE,
            stage=error.stage,
            reason=error.reason,
        )
        self.line = line
        self.event_id = event_id
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Admitted:
    """What ``admit_lines`` found: the log rows to append, and the leading lines skipped
    because the log holds them already."""

    records: tuple[EventRecord, ...]
    already_held: int


def _violation(explanation: str, **details: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.PROTOCOL_VIOLATION, explanation, details=details, rule=_RULE)


def _held_prefix(lines: Sequence[tuple[int, Any]], held: Sequence[str]) -> int:
    """How many leading lines are the log's own Events, all of them, byte for byte (0 when
    the file does not begin with the whole log)."""
    if not held or len(lines) < len(held):
        return 0
    for (_, doc), text in zip(lines, held, strict=False):
        if canonicalize(doc).decode("utf-8") != text:
            return 0
    return len(held)


def admit_lines(
    authority: Authority, held: Sequence[tuple[str, str]], documents: Sequence[bytes | str]
) -> Admitted:
    """Check and fold every Event of ``documents`` (blank lines are skipped, and counted) into
    ``authority``'s state, given the log's Events ``held`` as ``(event ID, canonical text)`` in
    log order; ``ImportRefused`` at the first line that fails."""
    lines: list[tuple[int, Any]] = []
    for number, data in enumerate(documents, start=1):
        if not (data.strip() if isinstance(data, str) else bytes(data).strip()):
            continue
        try:
            lines.append((number, parse_strict(data)))
        except ProtocolError as exc:
            raise ImportRefused(exc, number, None, None) from None
    skip = _held_prefix(lines, [text for _, text in held])
    if skip and skip == len(lines):
        raise ImportRefused(
            _violation(
                f"every Event of the file ({skip}) is already in this log, in the same order: "
                "it is this log's own history (its export?), so there is nothing to import",
                duplicates=[event_id for event_id, _ in held[:20]],
            ),
            lines[0][0],
            None,
            None,
        )
    known = {event_id for event_id, _ in held}
    seen: dict[str, int] = {}
    records = []
    for number, doc in lines[skip:]:
        event_id = doc.get("eventId") if isinstance(doc, dict) else None
        kind = doc.get("kind") if isinstance(doc, dict) else None
        try:
            records.append(_admit(authority, doc, known, seen, number))
        except ProtocolError as exc:
            raise ImportRefused(exc, number, _text(event_id), _text(kind)) from None
    return Admitted(records=tuple(records), already_held=skip)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _admit(
    authority: Authority, doc: Any, known: set[str], seen: dict[str, int], number: int
) -> EventRecord:
    state = authority.state
    event_id = doc.get("eventId") if isinstance(doc, dict) else None
    if event_id in known:
        raise _violation(
            f"Event ID {event_id} is already in this log, so the file holds a copy of an Event "
            "this sandbox has (a log names each Event once). A file that begins with this "
            "log's whole history, byte for byte, is accepted as its continuation; otherwise "
            "leave out the Events the log already holds.",
            duplicate=event_id,
        )
    if isinstance(event_id, str) and event_id in seen:
        raise _violation(
            f"Event ID {event_id} appears twice in the file (first on line {seen[event_id]}): "
            "a log names each Event once.",
            duplicate=event_id,
            firstLine=seen[event_id],
        )
    verified = verify_parsed(profile_for("event"), doc, state.registry)
    event_id, kind = doc["eventId"], doc["kind"]  # the schema stage made both strings
    seen[event_id] = number
    if verified.principal.id not in authority.identity.control_services:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"it was accepted by {verified.principal.id}, which this Organization does not "
            "trust as a Group Authority.",
            rule="§6.4 an Event is signed by the Group Authority that accepted it",
        )
    refusal = unknown_event(kind)
    if refusal is not None:
        raise refusal
    needs = uninterpretable(doc, EVENT_PROFILES.get(kind, frozenset()))
    if needs is not None:
        raise ProtocolError(
            ErrorCode.UNKNOWN_CRITICAL_EXTENSION,
            f"the {kind} Event depends on {needs}, which this sandbox cannot interpret, so it "
            "cannot replay the transition (§18).",
            details={"extension": needs.uri, "at": needs.where},
            rule="§18 refuse a transition that depends on an unknown critical profile",
        )
    group_id = doc.get("groupId")
    if group_id is not None:
        group = state.groups.get(group_id)
        previous = group.last_sequence if group is not None else 0
        if doc.get("sequence") != previous + 1:
            raise _violation(
                f"it has sequence {doc.get('sequence')} in Group {group_id}, whose last Event "
                f"is sequence {previous}: a Group's Events are numbered 1, 2, 3, ... without "
                "gaps or repeats.",
                sequence=doc.get("sequence"),
                previous=previous,
            )
    wid = doc.get("workItemId")
    before = state.work_items.get(wid) if wid else None
    _folded(authority.admit, doc)
    after = state.work_items.get(wid) if wid else None
    moved = after is not None and (before is None or before.state != after.state)
    return event_record(
        doc,
        str(before.state) if moved and before is not None else None,
        str(after.state) if moved and after is not None else None,
    )


def _folded(admit: Callable[[dict[str, Any]], None], doc: dict[str, Any]) -> None:
    """``Authority.admit``, its refusals in section-19 terms: the state tables' verdict is
    ``INVALID_STATE_TRANSITION``; a payload the kind's fold cannot read (a member missing or of
    the wrong type) is ``SCHEMA_VALIDATION_FAILED``."""
    try:
        admit(doc)
    except ProtocolError:
        raise
    except ReplayError as exc:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"the state tables refuse it: {exc}",
            rule="§10.2 an Event records a transition its state table allows",
        ) from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        what = f"member {exc}" if isinstance(exc, KeyError) else f"a member ({exc})"
        raise ProtocolError(
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            f"its payload lacks or misshapes {what} that a {doc['kind']} Event carries, so it "
            "cannot be folded into the state: the Group Authority never appends such an Event.",
            rule="§21 every core object conforms to its schema",
        ) from None
