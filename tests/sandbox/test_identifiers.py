"""Identifiers unique across sandboxes (§2, §16; issue 21 point 9): every identifier a sandbox
derives is scoped by its Organization ID, which the seed and the mission decide, so two
sandboxes of different missions or seeds share no Event, offer, Action or frame ID (a recipient
deduplicating by Event ID would otherwise drop real Events of one as repeats of the other),
while the same seed and mission give the same Organization and the same bytes (and
``tools/golden.py`` checks the bytes)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.delivery import frames
from mwp_local.drivers.mission_file import MissionFileError, parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.ids import derived_uuid, is_protocol_id, sandbox_organization_id
from mwp_local.protocol.jsontext import parse_strict

MISSIONS = Path(__file__).resolve().parents[2] / "sample_missions"


def _raw(name: str) -> dict[str, Any]:
    return tomllib.loads((MISSIONS / f"{name}.toml").read_text())


def _uuids(value: Any) -> Iterator[str]:
    """Every ``urn:uuid:`` string anywhere in a document (Event, offer, Action, Correlation,
    Evidence, Artifact IDs...)."""
    if isinstance(value, str):
        if value.startswith("urn:uuid:"):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _uuids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _uuids(item)


def _values_of(key: str, value: Any) -> Iterator[str]:
    """Every value of member ``key`` anywhere in a document."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key and isinstance(item, str):
                yield item
            else:
                yield from _values_of(key, item)
    elif isinstance(value, list):
        for item in value:
            yield from _values_of(key, item)


class Run:
    """A finished sandbox run with the identifiers it derived."""

    def __init__(self, directory: Path, raw: dict[str, Any], *, seed: int | None = None) -> None:
        self.frame_ids: list[str] = []
        original = frames.FrameIds.next
        recorded = self.frame_ids

        def next_id(ids: frames.FrameIds) -> str:
            frame_id = original(ids)
            recorded.append(frame_id)
            return frame_id

        with pytest.MonkeyPatch.context() as patch:  # every frame either side sends
            patch.setattr(frames.FrameIds, "next", next_id)
            self.sandbox = Sandbox(directory, parse(raw, name="mission"), seed=seed)
            assert self.sandbox.run().finished
        self.events = [parse_strict(e.document) for e in self.sandbox.log.store.events()]
        self.event_ids = {e["eventId"] for e in self.events}
        self.offer_ids = {u for e in self.events for u in _values_of("offerId", e)}
        self.derived = {u for e in self.events for u in _uuids(e)}
        self.sandbox.log.store.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("ids")
    learn = _raw("learn")
    edited = _raw("learn")
    edited["missions"][0]["objective"] += " (a second team's copy)"
    delivery = _raw("delivery")
    return {
        "learn": Run(base / "learn", learn),
        # the same mission name, Group and Principals: only the content differs
        "learn-edited": Run(base / "learn-edited", edited),
        # the same mission file, another seed
        "learn-seed-2": Run(base / "learn-seed-2", learn, seed=learn["sandbox"]["seed"] + 1),
        "delivery": Run(base / "delivery", delivery),
        "delivery-seed-4": Run(base / "delivery-seed-4", delivery, seed=4),
    }


@pytest.mark.req("MWP-WRK-029")
@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("learn", "learn-edited"),
        ("learn", "learn-seed-2"),
        ("learn", "delivery"),
        ("delivery", "delivery-seed-4"),
    ],
)
def test_two_sandboxes_share_no_event_offer_or_other_derived_id(
    runs: dict[str, Run], one: str, other: str
) -> None:
    a, b = runs[one], runs[other]
    assert a.sandbox.organization_id != b.sandbox.organization_id
    # the collision the issue found: the same Group and the same sequences in both logs
    assert {e.get("groupId") for e in a.events} & {e.get("groupId") for e in b.events}
    assert a.event_ids and not a.event_ids & b.event_ids
    assert a.offer_ids and b.offer_ids and not a.offer_ids & b.offer_ids
    assert not a.derived & b.derived  # Action, Correlation, Evidence, Artifact IDs too


def test_two_sandboxes_of_another_seed_share_no_frame_id(runs: dict[str, Run]) -> None:
    a, b = runs["delivery"], runs["delivery-seed-4"]
    assert len(set(a.frame_ids)) == len(a.frame_ids) > 100  # unique within a run, too
    assert b.frame_ids and not set(a.frame_ids) & set(b.frame_ids)


def test_the_organization_id_is_the_seed_and_mission_and_reaches_every_document(
    runs: dict[str, Run],
) -> None:
    run = runs["learn"]
    spec = run.sandbox.spec
    expected = sandbox_organization_id(run.sandbox.seed, spec.name, spec.content_hash)
    assert run.sandbox.organization_id == expected == run.sandbox.log.org.organization_id
    assert expected.startswith(f"urn:mwp-local:organization:{spec.name}-")
    assert is_protocol_id(expected)
    assert all(m.organization_id == expected for m in run.sandbox.log.org.members.values())
    cards = [
        e["payload"]["agentCard"]
        for e in run.events
        if isinstance(e["payload"].get("agentCard"), dict)
    ]
    assert cards and {c["organizationId"] for c in cards} == {expected}


def test_the_same_seed_and_mission_give_the_same_organization() -> None:
    raw = _raw("learn")
    first, again = parse(raw, name="learn"), parse(_raw("learn"), name="learn")
    assert first.content_hash == again.content_hash
    assert sandbox_organization_id(1, first.name, first.content_hash) == sandbox_organization_id(
        1, again.name, again.content_hash
    )
    assert sandbox_organization_id(1, "learn", first.content_hash) != sandbox_organization_id(
        2, "learn", first.content_hash
    )
    # a sandbox with no mission (mwp-local init) is its seed's own Organization
    assert sandbox_organization_id(5) == "urn:mwp-local:organization:seed-5"


def test_a_mission_file_may_name_its_organization(tmp_path: Path) -> None:
    raw = _raw("learn")
    raw["sandbox"]["organization"] = "urn:example:organization:acme"
    spec = parse(raw, name="learn")
    assert spec.organization == "urn:example:organization:acme"
    raw["sandbox"]["organization"] = "acme corp"
    with pytest.raises(MissionFileError, match="not an identifier"):
        parse(raw, name="learn")


def test_a_derived_identifier_needs_an_organization_scope() -> None:
    with pytest.raises(ValueError, match="Organization ID"):
        derived_uuid("frame", "bus", "1")  # the old, unscoped spelling
    org_a, org_b = "urn:mwp-local:organization:a", "urn:mwp-local:organization:b"
    assert derived_uuid(org_a, "frame", "bus", "1") != derived_uuid(org_b, "frame", "bus", "1")
