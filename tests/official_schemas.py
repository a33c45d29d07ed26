"""The official JSON Schemas, loaded from ../shared/protocol for tests only (jsonschema, Draft
2020-12 with format assertion on). The project's own code never uses these."""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from .conftest import PROTOCOL_ROOT


@functools.cache
def _registry() -> Registry:
    resources = []
    for path in sorted((PROTOCOL_ROOT / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text())
        resource = Resource.from_contents(schema)
        resources.append((schema["$id"], resource))
        resources.append((path.name, resource))
    return Registry().with_resources(resources)


@functools.cache
def validator(name: str) -> Draft202012Validator:
    """A validator for ``<name>.schema.json`` (e.g. ``"event"``)."""
    schema = json.loads((PROTOCOL_ROOT / "schemas" / f"{name}.schema.json").read_text())
    return Draft202012Validator(
        schema, registry=_registry(), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def problems(name: str, doc: Any) -> list[str]:
    """Every official-schema violation of ``doc``, as readable strings."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator(name).iter_errors(doc)
    ]


@functools.cache
def _profile_validator(kind: str) -> Draft202012Validator:
    from mwp_local.protocol.profiles import payload_schema

    return Draft202012Validator(
        dict(payload_schema(kind)), format_checker=Draft202012Validator.FORMAT_CHECKER
    )


def profile_problems(kind: str, payload: Any) -> list[str]:
    """Every violation of the sandbox Extension Profile's schema by the payload of a Command or
    Event of ``kind`` (a kind of ``ext.mwp-local.sandbox.*``)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _profile_validator(kind).iter_errors(payload)
    ]


#: Payload member → the official document it embeds (``schema``) or the WorkItem member it
#: carries (``work-item#member``): written here from the specification's Event catalogue, apart
#: from the library's own list (``mwp_local.authority.embedded``), so each judges the other.
EMBEDDED_MEMBERS: dict[str, str] = {
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
    "owner": "work-item#owner",
    "offers": "work-item#offers",
    "selectionBasis": "work-item#selectionBasis",
    "scheduleEstimate": "work-item#scheduleEstimate",
    "progress": "work-item#progress",
    "submission": "work-item#submission",
}


@functools.cache
def _member_validator(schema: str, member: str) -> Draft202012Validator:
    return Draft202012Validator(
        {"$ref": f"{schema}.schema.json#/properties/{member}"},
        registry=_registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def embedded_problems(event: dict[str, Any]) -> list[str]:
    """Every official-schema violation of a document (or WorkItem member) ``event`` embeds."""
    found: list[str] = []
    payload = event.get("payload") or {}
    for member, target in EMBEDDED_MEMBERS.items():
        value = payload.get(member)
        if value is None:
            continue
        where = f"{event['kind']} {event['eventId']} payload/{member}"
        if "#" in target:
            schema, inner = target.split("#")
            found += [
                f"{where}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in _member_validator(schema, inner).iter_errors(value)
            ]
            continue
        for index, doc in enumerate(value if isinstance(value, list) else [value]):
            found += [f"{where}/{index}: {p}" for p in problems(target, doc)]
    return found
