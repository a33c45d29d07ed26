"""Who plays which part in a mission file: one sans-IO policy per Principal.

``cast_policies`` is the single place a driver asks "what policy does this Principal run?":

* each human MissionOwner: a ``MissionOwnerPolicy`` for the root Missions it owns;
* each Agent that coordinates a Mission, or stands by to replace a Coordinator: a
  ``CoordinatorPolicy`` for those Missions (child Missions included: their Coordinators are
  named in the mission file too), with the driver's verified content source for its reviews;
* every other Agent: the Worker policy the driver builds (``make_worker``), wrapped in a
  ``ReviewerPolicy`` (it publishes its signed assessment when given a review WorkItem and is
  inert otherwise);
* any Agent with scheduled ``[[faults]]``: wrapped in a ``FaultyPolicy``.

``custom`` names, per Principal, a subclass of the built-in policy of its part to run instead
(a prototype overriding its hooks): a ``MissionOwnerPolicy`` for a human, a
``CoordinatorPolicy`` for a Coordinator, a ``ReviewerPolicy`` for a Worker's reviewing side (the
Worker class itself is ``make_worker``'s choice). It is built with the built-in's arguments, so
it meets the same Authority with the same identity.

It builds objects only; it performs no I/O (the content source is the driver's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from ..artifacts.checks import ContentSource
from .base import Policy
from .coordinator.core import CoordinatorPolicy
from .faults import FaultyPolicy
from .owner import MissionOwnerPolicy
from .reviewer import ReviewerPolicy
from .specs import AgentSpec, MissionFile

P = TypeVar("P")


def wrap_worker(
    spec: MissionFile,
    agent: AgentSpec,
    worker: Policy,
    *,
    seed: int = 0,
    reviewer: type[ReviewerPolicy] = ReviewerPolicy,
) -> Policy:
    """A Worker policy as a mission file runs it: able to review (``reviewer``, a
    ``ReviewerPolicy``) and silenced by its scheduled faults (``FaultyPolicy``). Both wrappers
    are transparent to everything else."""
    reviewing = reviewer(
        worker, reject_rate=agent.behaviour.reject_rate, salt=f"{seed}:{agent.name}"
    )
    return FaultyPolicy.scheduled(reviewing, spec.faults_of(agent.name), spec.start_us)


def cast_policies(
    spec: MissionFile,
    *,
    content: ContentSource | None,
    make_worker: Callable[[AgentSpec], Policy],
    seed: int = 0,
    custom: Mapping[str, type[Policy]] | None = None,
    content_for: Callable[[str], ContentSource] | None = None,
) -> dict[str, Policy]:
    """Principal name → the policy it runs, for every human and Agent of ``spec``.

    ``content_for(name)``, when given, is the content source of that Coordinator (a gated one:
    ``artifacts.manifests.GatedContent``) in place of ``content``."""
    custom = custom or {}
    policies: dict[str, Policy] = {}
    for human in spec.humans:
        owned = [m for m in spec.roots if m.owner == human]
        owner = _custom(custom, human, MissionOwnerPolicy)
        policies[human] = owner(owned, spec.start_us)
    coordinators = spec.coordinator_names()
    for agent in spec.agents:
        if agent.name in coordinators:
            kind = _custom(custom, agent.name, CoordinatorPolicy)
            coordinator = kind(
                spec.coordinated_by(agent.name),
                spec.start_us,
                content=content if content_for is None else content_for(agent.name),
            )
            policies[agent.name] = FaultyPolicy.scheduled(
                coordinator, spec.faults_of(agent.name), spec.start_us
            )
        else:
            reviewer = _custom(custom, agent.name, ReviewerPolicy)
            worker = make_worker(agent)
            policies[agent.name] = wrap_worker(spec, agent, worker, seed=seed, reviewer=reviewer)
    return policies


def _custom(custom: Mapping[str, type[Policy]], name: str, default: type[P]) -> type[P]:
    """``custom[name]`` if it is a ``default`` subclass (the one that part runs), else
    ``default``."""
    kind = custom.get(name)
    return kind if isinstance(kind, type) and issubclass(kind, default) else default
