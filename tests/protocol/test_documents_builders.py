"""The public documents API: ``validate``/``errors`` and the typed builders.

Validation failures are ``SCHEMA_VALIDATION_FAILED`` errors with a plain-language explanation
and every problem in ``details``; typed values are frozen, validated when built by hand, emit
lowerCamelCase wire JSON without ``None`` members, and their enumerations spell the wire values
the official schemas enumerate. The project never uses a JSON Schema library at run time and
never names the official schema URLs.
"""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

import mwp_local
from mwp_local.protocol import documents
from mwp_local.protocol.documents import (
    SCHEMA_NAMES,
    Actor,
    ActorType,
    Command,
    CommandKind,
    DataRefContent,
    Event,
    EventKind,
    Message,
    Signature,
    WorkItem,
    document_from_json,
    errors,
    frame_from_json,
    validate,
)
from mwp_local.protocol.documents.governance import WIRE_ERROR_CODES
from mwp_local.protocol.documents.kinds import (
    COORDINATOR_ONLY_KINDS,
    ORGANIZATION_SCOPED_COMMAND_KINDS,
    ORGANIZATION_SCOPED_EVENT_KINDS,
)
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from tests.protocol.test_documents_corpus import EXTRA_SEEDS, SCHEMA_DIR, SCHEMA_DOCS, vector

SIGNATURE = Signature(
    key_id="urn:missionweaveprotocol:key:k", created_at="2026-07-15T00:00:00Z", value="c2ln"
)


def _command(**changes: Any) -> Command:
    fields: dict[str, Any] = {
        "action_id": "urn:uuid:00000000-0000-4000-8000-000000000001",
        "actor": Actor(type=ActorType.AGENT, id="urn:missionweaveprotocol:agent:worker"),
        "session_epoch": 1,
        "membership_epoch": 1,
        "group_id": "urn:missionweaveprotocol:group:g",
        "kind": CommandKind.MESSAGE_POST,
        "correlation_id": "urn:uuid:00000000-0000-4000-8000-000000000002",
        "issued_at": "2026-07-15T00:00:00Z",
        "payload": {"text": "hello"},
        "signature": SIGNATURE,
    }
    fields.update(changes)
    return Command(**fields)


# --------------------------------------------------------------------------- validate / errors


def test_schema_names_are_the_21_document_schema_files() -> None:
    files = {p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json")}
    assert set(SCHEMA_NAMES) == files - {"common"}
    assert len(SCHEMA_NAMES) == 21


def test_validate_raises_schema_validation_failed_with_every_problem() -> None:
    item = vector("work-item")
    item["contract"]["acceptanceCriteria"][0]["evidenceRequired"] = []
    item["exclusive"] = "yes"
    with pytest.raises(ProtocolError) as raised:
        validate("work-item", item)
    error = raised.value
    assert error.code is ErrorCode.SCHEMA_VALIDATION_FAILED
    assert error.stage == "schema"
    assert error.details["path"] == "exclusive"
    assert error.details["problems"] == [
        {"path": "exclusive", "message": "must be true or false, not a string"},
        {
            "path": "contract.acceptanceCriteria[0].evidenceRequired",
            "message": "must contain at least 1 item",
        },
    ]
    assert error.explanation == (
        "The work-item does not conform to its schema: "
        "exclusive: must be true or false, not a string (and 1 more problem)"
    )


def test_a_conforming_document_validates_silently() -> None:
    validate("lease", vector("lease"))
    assert errors("lease", vector("lease")) == []


def test_an_unknown_schema_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown document schema 'common'"):
        errors("common", {})


def test_a_document_that_is_not_an_object_has_one_problem_at_the_root() -> None:
    assert [str(p) for p in errors("group", [])] == ["(document): must be an object, not an array"]


# --------------------------------------------------------------------------- typed builders


def test_a_command_built_by_hand_emits_camel_case_wire_json_without_none_members() -> None:
    command = _command()
    assert command.to_json() == {
        "protocolVersion": "0.1",
        "actionId": "urn:uuid:00000000-0000-4000-8000-000000000001",
        "actor": {"type": "agent", "id": "urn:missionweaveprotocol:agent:worker"},
        "sessionEpoch": 1,
        "membershipEpoch": 1,
        "groupId": "urn:missionweaveprotocol:group:g",
        "kind": "message.post",
        "correlationId": "urn:uuid:00000000-0000-4000-8000-000000000002",
        "issuedAt": "2026-07-15T00:00:00Z",
        "payload": {"text": "hello"},
        "signature": {
            "keyId": "urn:missionweaveprotocol:key:k",
            "createdAt": "2026-07-15T00:00:00Z",
            "value": "c2ln",
            "algorithm": "Ed25519",
        },
    }
    assert type(command.to_json()["kind"]) is str


def test_building_an_invalid_command_by_hand_is_refused() -> None:
    with pytest.raises(ProtocolError) as raised:
        _command(session_epoch=None)
    assert raised.value.code is ErrorCode.SCHEMA_VALIDATION_FAILED
    assert raised.value.details["problems"] == [
        {
            "path": "sessionEpoch",
            "message": "is required (an Agent Command carries its Group ID, Session Epoch and "
            "Membership Epoch)",
        }
    ]


def test_building_an_invalid_nested_value_is_refused_where_it_is_built() -> None:
    with pytest.raises(ProtocolError, match="id: must be an identifier"):
        Actor(type=ActorType.HUMAN, id="not a uri")


def test_typed_values_are_frozen() -> None:
    command = _command()
    with pytest.raises(dataclasses.FrozenInstanceError):
        command.kind = CommandKind.WORK_START  # type: ignore[misc]


def test_core_kinds_become_enum_members_and_extension_kinds_stay_strings() -> None:
    core = Command.from_json(vector("command"))
    assert core.kind is CommandKind.MISSION_SUBMIT_FOR_APPROVAL
    extension = Event.from_json(vector("organization-session-opened-event"))
    assert extension.kind == "ext.missionweaveprotocol.identity.session_opened"
    assert not isinstance(extension.kind, StrEnum)


def test_integral_numbers_become_ints_in_typed_values() -> None:
    doc = vector("command")
    doc["sessionEpoch"] = 7.0
    assert Command.from_json(doc).session_epoch == 7
    assert type(Command.from_json(doc).session_epoch) is int


def test_from_json_reports_paths_inside_nested_objects() -> None:
    doc = vector("work-item")
    doc["owner"]["capabilityPins"][0]["version"] = "2.1"
    with pytest.raises(ProtocolError) as raised:
        WorkItem.from_json(doc)
    assert raised.value.details["path"] == "owner.capabilityPins[0].version"


def test_a_data_reference_keeps_a_null_datum() -> None:
    doc = vector("message")
    doc["content"] = [{"type": "data_ref", "schema": "urn:x:schema", "data": None}]
    message = Message.from_json(doc)
    assert message.content == (DataRefContent(schema="urn:x:schema", data=None),)
    assert message.to_json()["content"] == doc["content"]


FRAMES = [seed for seed in EXTRA_SEEDS if seed[0] == "websocket-frame"]


@pytest.mark.parametrize("seed", FRAMES, ids=lambda s: s[1])
def test_each_frame_becomes_the_class_of_its_frame_type_and_phase(
    seed: tuple[str, str, Any],
) -> None:
    frame = frame_from_json(seed[2])
    expected = seed[2]["frameType"].title() if seed[2]["frameType"] != "HELLO" else "Hello"
    assert type(frame).__name__.startswith(expected)
    assert frame.to_json() == seed[2]
    assert document_from_json("websocket-frame", seed[2]) == frame


def test_an_unknown_frame_type_names_the_known_ones() -> None:
    with pytest.raises(
        ProtocolError, match='frameType: must be a known frame type: one of "HELLO"'
    ):
        frame_from_json({"frameType": "MESSAGE_DELTA"})


# --------------------------------------------------------------------------- vocabularies


def test_command_kinds_are_the_schemas_core_list_in_order() -> None:
    defs = SCHEMA_DOCS["command"]["$defs"]
    assert [k.value for k in CommandKind] == defs["coreCommandKind"]["enum"]
    assert list(COORDINATOR_ONLY_KINDS) == defs["coordinatorOnlyKind"]["enum"]
    assert list(ORGANIZATION_SCOPED_COMMAND_KINDS) == defs["organizationScopedKind"]["enum"]


def test_event_kinds_are_the_schemas_core_list_in_order() -> None:
    schema = SCHEMA_DOCS["event"]
    assert [k.value for k in EventKind] == schema["properties"]["kind"]["anyOf"][0]["enum"]
    condition = schema["allOf"][0]["if"]["properties"]["kind"]["enum"]
    assert list(ORGANIZATION_SCOPED_EVENT_KINDS) == condition


def test_wire_error_codes_are_the_schemas_and_the_error_code_enumeration() -> None:
    assert list(WIRE_ERROR_CODES) == SCHEMA_DOCS["error"]["properties"]["code"]["enum"]
    assert [c.value for c in ErrorCode] == list(WIRE_ERROR_CODES)


def _wire_enums() -> list[type[StrEnum]]:
    return [
        value
        for value in vars(documents).values()
        if isinstance(value, type) and issubclass(value, StrEnum) and value is not StrEnum
    ]


@pytest.mark.parametrize("enum", _wire_enums(), ids=lambda e: e.__name__)
def test_enum_member_names_agree_with_their_wire_values(enum: type[StrEnum]) -> None:
    for member in enum:
        assert member.name == member.value.upper().replace(".", "_").replace("-", "_")


# --------------------------------------------------------------------------- independence


def test_the_documents_package_imports_no_json_schema_library() -> None:
    code = (
        "import sys, mwp_local.protocol.documents, mwp_local.conformance.structural; "
        "assert not [m for m in sys.modules if m.split('.')[0] in "
        "('jsonschema', 'referencing', 'fastjsonschema')], sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_project_never_names_the_official_schema_urls() -> None:
    package = Path(mwp_local.__file__).parent
    offenders = [
        str(path)
        for path in package.rglob("*")
        if path.is_file()
        and path.suffix in {".py", ".json", ".md", ".txt", ".typed"}
        and "missionweaveprotocol.dev/schemas" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_the_runtime_path_imports_no_typed_builder() -> None:
    """The typed builders are imported on first use only (start-up): a Sandbox, the proof of
    concept and its checks validate with shapes and never load ``documents.values``."""
    code = (
        "import sys\n"
        "import mwp_local.cli.poc, mwp_local.poc.checks, mwp_local.poc.scenario, mwp_local.drivers.sandbox\n"
        "from mwp_local.protocol import documents\n"
        "assert not [m for m in sys.modules if '.documents.values' in m], sorted(sys.modules)\n"
        "documents.WorkContract  # the first read imports its module\n"
        "assert 'mwp_local.protocol.documents.values.work' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_lazy_name_is_exported_by_the_values_module_it_names() -> None:
    """``documents._VALUES`` (name → module, read before anything is imported) sends each name
    to the ``documents.values`` module that exports it, and every name of ``__all__`` resolves."""
    package = "mwp_local.protocol.documents.values"
    for name, module in documents._VALUES.items():
        assert name in importlib.import_module(f"{package}.{module}").__all__, name
    assert all(getattr(documents, name) is not None for name in documents.__all__)
