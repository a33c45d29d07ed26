"""Mission isolation in the Authority (MWP-WRK-028): another Mission's Artifacts cannot be used
as sources or inputs unless forwarded with permission or published as Organization knowledge."""

from __future__ import annotations

import pytest

from .world import GROUP, World

OTHER_GROUP = "urn:mwp-local:group:beta"
OTHER_MISSION = "urn:mwp-local:mission:beta"
WID = "urn:mwp-local:work:impl"
OTHER_WID = "urn:mwp-local:work:beta-impl"


@pytest.fixture
def world() -> World:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.create_mission(group=OTHER_GROUP, mission=OTHER_MISSION)
    return w


@pytest.mark.req("MWP-WRK-028")
def test_another_missions_artifact_cannot_be_a_work_input(world: World) -> None:
    artifact = world.run_to_submitted(WID)
    contract = world.contract(inputArtifacts=[artifact])
    world.refuse(
        "AUTH_FORBIDDEN",
        "coordinator",
        "work.authorize",
        {"workItemId": OTHER_WID, "contract": contract},
        group=OTHER_GROUP,
    )


@pytest.mark.req("MWP-WRK-028")
def test_its_own_missions_artifact_can_be_a_work_input(world: World) -> None:
    artifact = world.run_to_submitted(WID)
    world.ok(
        "coordinator",
        "work.authorize",
        {
            "workItemId": "urn:mwp-local:work:next",
            "contract": world.contract(inputArtifacts=[artifact]),
        },
        group=GROUP,
    )
