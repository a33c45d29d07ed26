"""A Worker policy in its runtime, wired to the Authority test ``World``: what it receives is what
the World's Authority accepted, and what it sends goes through that Authority."""

from __future__ import annotations

import random
from typing import Any

from mwp_local.agents.base import Intent
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.specs import Behaviour
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.authority.pipeline import Outcome
from mwp_local.protocol.timestamps import format_utc
from mwp_local.store.agent_store import LocalStore, MemoryLocalStore

from ..authority.world import CAP, GROUP, World

__all__ = ["CAP", "GROUP", "World", "act", "data_refs", "started_world", "worker"]


def worker(
    world: World,
    name: str = "worker-a",
    *,
    store: LocalStore | None = None,
    behaviour: Behaviour | None = None,
    **policy: Any,
) -> AgentRuntime:
    """``name``'s runtime with a fresh Worker policy, caught up with the World's Events."""
    fields: dict[str, Any] = {
        "capabilities": {CAP[0]: CAP[1]},
        "max_concurrency": 2,
        "behaviour": behaviour or Behaviour(jitter=0.0),
        "rng": random.Random(f"test:{name}"),
    }
    fields.update(policy)
    runtime = AgentRuntime(
        world.org, world.org.get(name), WorkerPolicy(**fields), local=store or MemoryLocalStore()
    )
    runtime.deliver(world.events)
    return runtime


def send(world: World, runtime: AgentRuntime, intent: Intent) -> Outcome:
    """Sign ``intent`` as the runtime would, submit it to the World, deliver, report back."""
    data = runtime.command(intent, format_utc(world.now_us))
    outcome = world.deliver(data)
    runtime.deliver(world.events)
    runtime.outcome(intent, outcome, world.now_us)
    return outcome


def act(world: World, runtime: AgentRuntime, kinds: tuple[str, ...] = ()) -> list[Intent]:
    """Deliver what the World accepted, then send what the runtime wants now (only ``kinds`` if
    given), one Intent at a time, until it wants nothing more; returns the Intents sent."""
    sent: list[Intent] = []
    runtime.deliver(world.events)
    for _ in range(50):
        wanted = [i for i in runtime.intents(world.now_us) if not kinds or i.kind in kinds]
        if not wanted:
            return sent
        send(world, runtime, wanted[0])
        sent.append(wanted[0])
    raise AssertionError(f"the Worker keeps wanting to act: {[i.kind for i in sent[-5:]]}")


def data_refs(world: World, schema: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Every (Message, data) pair of a posted Message carrying a ``data_ref`` of ``schema``."""
    out = []
    for event in world.events:
        if event["kind"] != "message.posted":
            continue
        message = event["payload"]["message"]
        for part in message["content"]:
            if part["type"] == "data_ref" and part["schema"] == schema:
                out.append((message, part["data"]))
    return out


def started_world() -> World:
    """A World with its Mission created, every Agent's Session open, and nothing authorized."""
    world = World()
    world.bootstrap()
    world.create_mission(
        budget={
            "currency": "EUR",
            "financialLimit": 1000,
            "toolCallLimit": 500,
            "computeSecondsLimit": 100_000,
        }
    )
    return world
