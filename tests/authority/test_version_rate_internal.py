"""Three section-19 codes the Authority once never produced (issue 21 point 7): another protocol
version is ``UNSUPPORTED_VERSION`` (§21), a Principal over the Organization's rate policy is
``RATE_LIMITED`` (§20), and an unexpected failure inside a handler is ``INTERNAL_ERROR`` with
the state rolled back (§19). Each is sent as a careless or hostile client would, and
``World.refuse`` proves the state (on DuckDB also the stored log and projections) unchanged."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import Accepted, AuthorityConfig, RatePolicy, Rejected
from mwp_local.authority import registry as handler_registry
from mwp_local.authority.command import Draft
from mwp_local.authority.context import Context
from mwp_local.protocol.documents.kinds import CommandKind, EventKind

from .world import GROUP, MISSION, WHERE_REFUSED, LoggedWorld, World, mission_world

POST = CommandKind.MESSAGE_POST.value


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


# --------------------------------------------------------------------------- UNSUPPORTED_VERSION


def test_a_command_of_another_protocol_version_is_unsupported_not_a_schema_failure(
    world: World,
) -> None:
    rejected = world.refuse(
        "UNSUPPORTED_VERSION", "mission-owner", POST, _text("hi"), extra={"protocolVersion": "0.2"}
    )
    assert rejected.error.details == {"presented": "0.2", "supported": ["0.1"]}
    assert "0.1" in rejected.error.explanation and "§21" in str(rejected.error.rule)
    assert rejected.record.code == "UNSUPPORTED_VERSION"


def test_a_malformed_protocol_version_is_still_the_schemas_to_judge(world: World) -> None:
    world.refuse(
        "SCHEMA_VALIDATION_FAILED",
        "mission-owner",
        POST,
        _text("hi"),
        extra={"protocolVersion": "zero point two"},
    )


# --------------------------------------------------------------------------- RATE_LIMITED


def _limited(where: str, tmp_path: Path, policy: RatePolicy) -> World:
    config = AuthorityConfig(rate_policy=policy)
    if where == "duckdb":
        from mwp_local.store.duckdb_log import DuckDBLogStore

        w: World = LoggedWorld(DuckDBLogStore(tmp_path / "group.duckdb"), config=config)
    else:
        w = World(config=config)
    w.bootstrap()
    w.create_mission()
    return w


def test_there_is_no_rate_limit_unless_the_configuration_sets_one(world: World) -> None:
    assert world.authority.config.rate_policy is None
    for i in range(20):
        world.ok("mission-owner", POST, _text(f"message {i}"))


@pytest.mark.parametrize("where", WHERE_REFUSED)
def test_a_principal_over_its_rate_policy_is_rate_limited_until_the_window_moves(
    where: str, tmp_path: Path
) -> None:
    w = _limited(where, tmp_path, RatePolicy(max_commands=2, window_us=60_000_000))
    w.advance(60)  # the Mission's creation leaves the window
    w.ok("mission-owner", POST, _text("one"))
    w.advance(10)
    w.ok("mission-owner", POST, _text("two"))
    w.advance(10)
    rejected = w.refuse("RATE_LIMITED", "mission-owner", POST, _text("three"))
    assert rejected.error.retryable
    assert rejected.error.details["retryAfter"] == "2026-07-15T00:02:00Z"  # "one" + 60 s
    assert rejected.record.code == "RATE_LIMITED"
    # another Principal is not limited by this one's traffic
    w.ok("coordinator", POST, _text("the Coordinator may still speak"))
    w.advance(40)  # the first message leaves the window
    w.ok("mission-owner", POST, _text("three, later"))


def test_a_rate_policy_may_count_only_some_kinds(tmp_path: Path) -> None:
    w = _limited(
        "in-memory",
        tmp_path,
        RatePolicy(max_commands=1, window_us=60_000_000, kinds=frozenset({POST})),
    )
    w.ok("mission-owner", POST, _text("one"))
    w.refuse("RATE_LIMITED", "mission-owner", POST, _text("two"))
    w.ok(
        "coordinator",
        "work.authorize",
        {"workItemId": "urn:mwp-local:work:x", "contract": w.contract()},
    )


def test_an_unchanged_retry_of_an_accepted_command_is_not_rate_limited(tmp_path: Path) -> None:
    w = _limited("in-memory", tmp_path, RatePolicy(max_commands=1, window_us=60_000_000))
    w.advance(60)
    data = w.command("mission-owner", POST, _text("once"))
    first = w.deliver(data)
    again = w.deliver(data)
    assert isinstance(first, Accepted) and isinstance(again, Accepted) and again.duplicate


# --------------------------------------------------------------------------- INTERNAL_ERROR


def _faulty(ctx: Context, cmd: Any) -> Generator[Draft, Any, None]:
    """A handler that appends one Event (folded at once) and then fails."""
    yield Draft(
        kind=EventKind.MESSAGE_POSTED,
        group_id=cmd.group_id,
        payload={"missionId": MISSION, "note": "half done"},
    )
    raise KeyError("a bug in the handler")


def test_a_handler_that_fails_half_way_is_an_internal_error_and_changes_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = handler_registry.HANDLERS[POST]
    monkeypatch.setitem(handler_registry._HANDLERS, POST, replace(spec, handler=_faulty))
    sequence = world.state.groups[GROUP].last_sequence
    rejected = world.refuse("INTERNAL_ERROR", "mission-owner", POST, _text("boom"))
    assert rejected.error.retryable
    assert "KeyError" in rejected.error.explanation
    assert "nothing changed" in rejected.error.explanation
    assert world.state.groups[GROUP].last_sequence == sequence  # the folded Event was undone
    assert rejected.record.code == "INTERNAL_ERROR"
    if isinstance(world, LoggedWorld):
        stored = world.log.store.rejections()
        assert stored[-1].code == "INTERNAL_ERROR" and stored[-1].kind == POST
    monkeypatch.undo()
    world.ok("mission-owner", POST, _text("the Authority works again"))


def test_a_handler_fed_a_state_that_makes_it_raise_is_an_internal_error(world: World) -> None:
    # A corrupted state (the Mission's budget ledger lost) makes work.authorize raise a KeyError.
    budgets = world.state.budgets
    del budgets[("mission", MISSION)]
    before = world.snapshot()
    outcome = world.send(
        "coordinator",
        "work.authorize",
        {"workItemId": "urn:mwp-local:work:x", "contract": world.contract()},
    )
    assert isinstance(outcome, Rejected) and outcome.error.code.value == "INTERNAL_ERROR"
    assert world.snapshot() == before
