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
