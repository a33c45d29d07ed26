"""The hooks of one's own agents, as Protocols (issue 22.3): which decision each names, when a
driver asks it, and what it may return.

A prototype subclasses a built-in policy and overrides the hooks it changes; the built-ins
(``WorkerPolicy``, ``CoordinatorPolicy``, ``MissionOwnerPolicy``, ``ReviewerPolicy``) conform to
these Protocols, which mypy checks (``_conformance`` below) and a test checks at run time.
Whatever a hook returns becomes a signed Command that the Group Authority accepts or refuses
with a section-19 code: a hook decides, the Authority referees.

``Sandbox`` uses ``required_hooks`` to tell, before anything runs, what a class passed in
``policies=`` lacks. Types only; no behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..authority.model import MissionRecord, WorkItemRecord
from .base import Intent, View

if TYPE_CHECKING:
    from .coordinator.offers import Candidate
    from .specs import MissionSpec, WorkSpec
    from .worker.admission import Admission
    from .worker.slots import SlotView
    from .worker.work import WorkOutput, WorkRequest


@runtime_checkable
class WorkerHooks(Protocol):
    """The decisions of a Worker (subclass ``WorkerPolicy``)."""

    def admit(self, view: View, item: WorkItemRecord, now_us: int) -> Admission:
        """Asked for each offer made to this Worker (after any essential ambiguity in the
        contract was asked about): ``Admission.accept()`` or ``Admission.decline(reason,
        detail)`` (posted as a structured decline in the WorkItem Conversation)."""
        ...

    def blocks(self, view: View, item: WorkItemRecord, now_us: int) -> str | None:
        """Asked when a run of ``item`` starts: the resolution it will need if it blocks (it
        blocks a quarter of the way in), or None."""
        ...

    def work(self, request: WorkRequest) -> WorkOutput:
        """Asked once per run of an attempt when its time is up: the work itself, given the
        contract and the verified content of its inputs; returns bytes or text, a
        ``Deliverable``, a ``Result`` (several Artifacts, Evidence), a ``Block`` or a
        ``Fail``."""
        ...

    def progress(self, slot: SlotView, report: dict[str, Any], now_us: int) -> dict[str, Any]:
        """Asked before each structured progress report (§11.4) goes out with a lease renewal
        or a checkpoint: the report as it should be sent."""
        ...


@runtime_checkable
class CoordinatorHooks(Protocol):
    """The decisions of a Coordinator (subclass ``CoordinatorPolicy``)."""

    def rank(
        self, view: View, item: WorkItemRecord, candidates: list[Candidate], now_us: int
    ) -> list[Candidate]:
        """Asked before each offer of ``item``: the eligible Workers, best first (reorder or
        filter ``candidates``); the first is offered the work."""
        ...

    def plan(self, spec: MissionSpec, rework: int) -> list[WorkSpec]:
        """Asked when the Mission starts and after each round of changes its owner requests
        (``rework`` rounds so far): the WorkItems it plans."""
        ...

    def discover(
        self,
        view: View,
        spec: MissionSpec,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> list[WorkSpec]:
        """Asked on each decision while the Mission runs: WorkItems found meanwhile (each
        planned once, by ``id``, and authorized once its dependencies exist)."""
        ...

    def review(
        self,
        view: View,
        item: WorkItemRecord,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> Intent | None:
        """Asked for each submitted WorkItem: accept it (``work.accept_result`` with the §13.2
        review), fail it, ask a reviewer, or wait (None)."""
        ...


@runtime_checkable
class MissionOwnerHooks(Protocol):
    """The decisions of a human MissionOwner (subclass ``MissionOwnerPolicy``)."""

    def cancel(self, view: View, mission: MissionRecord, now_us: int) -> Intent | None:
        """Asked on each decision while ``mission`` is live: a ``mission.cancel`` Intent
        (``cancel_intent(mission, why)`` makes one) or None."""
        ...

    def request_changes(
        self, view: View, mission: MissionRecord, reviews: list[dict[str, Any]], now_us: int
    ) -> Intent | None:
        """Asked at Approval, with the retained reviews (``work.result.accepted`` Events): a
        ``mission.request_changes`` Intent instead of approving, or None."""
        ...

    def approve(
        self, view: View, mission: MissionRecord, reviews: list[dict[str, Any]], now_us: int
    ) -> Intent:
        """Asked at Approval when no changes are requested: the ``mission.approve`` Intent
        carrying a signed ``mission_final`` Approval of the submitted revision and Artifacts."""
        ...

    def approve_execution(
        self, view: View, mission: MissionRecord, item: WorkItemRecord, now_us: int
    ) -> Intent | None:
        """Asked for each queued WorkItem that needs execution approval (§12): an
        ``approval.grant_execution`` Intent, or None to withhold it for now."""
        ...


@runtime_checkable
class ReviewerHooks(Protocol):
    """The decision of a reviewer Agent (subclass ``ReviewerPolicy``)."""

    def assess(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        """Asked when the deliverable of review WorkItem ``item`` is about to be published: the
        signed ``reviewer_assessment`` Evidence (``result`` passed or failed), which becomes the
        published JSON Artifact, derived from the Artifacts it names."""
        ...


#: The Protocol of each part's hooks.
HOOKS: dict[str, type[Any]] = {
    "WorkerPolicy": WorkerHooks,
    "CoordinatorPolicy": CoordinatorHooks,
    "MissionOwnerPolicy": MissionOwnerHooks,
    "ReviewerPolicy": ReviewerHooks,
}


def hook_names(protocol: type[Any]) -> tuple[str, ...]:
    """The hooks a Protocol of this module names, in their order."""
    return tuple(n for n in vars(protocol) if not n.startswith("_") and callable(vars(protocol)[n]))


def required_hooks(kind: object, protocol: type[Any]) -> tuple[str, ...]:
    """The hooks of ``protocol`` (and the driver's ``decide``) that ``kind`` lacks."""
    return tuple(
        n for n in ("decide", *hook_names(protocol)) if not callable(getattr(kind, n, None))
    )


if TYPE_CHECKING:  # mypy checks that every built-in policy conforms to its Protocol
    from .coordinator.core import CoordinatorPolicy
    from .owner import MissionOwnerPolicy
    from .reviewer import ReviewerPolicy
    from .worker.core import WorkerPolicy

    def _conformance(
        w: WorkerPolicy, c: CoordinatorPolicy, o: MissionOwnerPolicy, r: ReviewerPolicy
    ) -> tuple[WorkerHooks, CoordinatorHooks, MissionOwnerHooks, ReviewerHooks]:
        return (w, c, o, r)


__all__ = [
    "HOOKS",
    "CoordinatorHooks",
    "MissionOwnerHooks",
    "ReviewerHooks",
    "WorkerHooks",
    "hook_names",
    "required_hooks",
]
