"""Every document an Event embeds conforms to its schema (§21, issue 21 point 5).

An Event's payload carries whole protocol documents (a WorkItem, a Work Contract, a Membership,
Lease documents, an Artifact manifest, Evidence, an Approval, a Mission and its Group, an Agent
Card, a Message, a Context Package), and every Event about a WorkItem changes the WorkItem
document the Authority keeps (its selection basis, schedule estimate, progress, owner,
submission). ``EMBEDDED`` names the payload member of each document and its schema;
``problems`` lists what does not conform, judged by the project's own validators, including the
WorkItem document after the Event is folded. The Authority runs ``check`` on every Event it is
about to append, so a Command whose embedded object would not validate is refused
(``SCHEMA_VALIDATION_FAILED``; ``WORK_CONTRACT_INCOMPLETE`` for a Work Contract, §10.1) and
changes nothing; ``verify-log`` runs ``problems`` over a stored log. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..protocol.documents import errors
from ..protocol.errors import ErrorCode, ProtocolError
from .state import AuthorityState

__all__ = ["CONTEXT_PACKAGE_PART", "EMBEDDED", "check", "documents_of", "problems"]

#: Payload member → the schema of the document it holds (a list holds several).
EMBEDDED: Mapping[str, str] = {
    "workItem": "work-item",
    "contract": "work-contract",
    "membership": "membership",
    "leases": "lease",
    "artifact": "artifact",
    "evidence": "evidence",
    "reviewEvidence": "evidence",
    "approval": "approval",
    "mission": "mission",
    "group": "group",
    "agentCard": "agent-card",
    "message": "message",
    "contextPackage": "context-package",
}
#: §10.2 lets ``mission.create_child`` block an ``open`` or ``offered`` WorkItem (no owner, no
#: selection basis) and a child Approval verify it (no submission), while work-item.schema.json
#: requires those members in ``blocked`` and ``verified``: a WorkItem linked to a child Mission
#: is not judged on them (a specification conflict, noted in docs/architecture.md).
_CHILD_EXEMPT = frozenset({("owner",), ("selectionBasis",), ("submission",)})
#: The ``data_ref`` schema URI under which a Message part carries a Context Package.
CONTEXT_PACKAGE_PART = "urn:mwp-local:schema:context-package"


def documents_of(
    event: Mapping[str, Any], members: Mapping[str, str] = EMBEDDED
) -> Iterator[tuple[str, str, Any]]:
    """``(where, schema, document)`` for every document ``event`` embeds under one of
    ``members`` (payload member → schema), and every Context Package a Message part carries."""
    payload = event.get("payload")
    if not isinstance(payload, Mapping):
        return
    for member, schema in members.items():
        value = payload.get(member)
        if value is None:
            continue
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield f"payload/{member}/{index}", schema, item
        else:
            yield f"payload/{member}", schema, value
    message = payload.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    for index, part in enumerate(content if isinstance(content, list) else ()):
        if isinstance(part, Mapping) and part.get("schema") == CONTEXT_PACKAGE_PART:
            yield f"payload/message/content/{index}/data", "context-package", part.get("data")


def _work_item_of(event: Mapping[str, Any], state: AuthorityState) -> str | None:
    payload = event.get("payload")
    wid = event.get("workItemId")
    if wid is None and isinstance(payload, Mapping):
        wid = payload.get("workItemId")
    return wid if isinstance(wid, str) and wid in state.work_items else None


def problems(event: Mapping[str, Any], state: AuthorityState) -> list[tuple[str, str, str]]:
    """``(where, schema, problem)`` for every embedded document of ``event`` that does not
    conform, and for the WorkItem document ``state`` (folded through ``event``) keeps."""
    found = []
    for where, schema, document in documents_of(event):
        found += [(where, schema, str(p)) for p in errors(schema, document)]
    wid = _work_item_of(event, state)
    if wid is not None:
        document = state.work_item_document(wid)
        linked = state.work_items[wid].child_mission_id is not None
        found += [
            (f"WorkItem {wid}", "work-item", str(p))
            for p in errors("work-item", document)
            if not (linked and p.keyword == "required" and p.path[:1] in _CHILD_EXEMPT)
        ]
    return found


def check(event: Mapping[str, Any], state: AuthorityState) -> None:
    """Refuse an Event (before it is appended) whose embedded documents do not conform."""
    found = problems(event, state)
    if not found:
        return
    where, schema, problem = found[0]
    code = (
        ErrorCode.WORK_CONTRACT_INCOMPLETE
        if schema == "work-contract"
        else ErrorCode.SCHEMA_VALIDATION_FAILED
    )
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise ProtocolError(
        code,
        f"This Command would record a {schema} document that does not conform to "
        f"{schema}.schema.json, at {where}: {problem}{more}. Every document the log keeps "
        "conforms to its official schema; nothing was accepted.",
        details={
            "problems": [{"at": w, "schema": s, "problem": p} for w, s, p in found[:20]],
        },
        rule="§21 every core object conforms to its schema",
        stage="schema",
    )
