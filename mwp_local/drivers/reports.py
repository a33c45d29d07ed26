"""What the Sandbox reports: one step (``StepReport``), a run (``RunSummary``) and a Worker
restart (``RestartReport``). Plain values, with their text and notebook renderings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .progress import Stall

__all__ = ["RestartReport", "RunSummary", "StepReport"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepReport:
    """What one step did: who acted, why, the Command, and its Events or its rejection."""

    number: int
    at: str
    agent: str
    kind: str
    why: str
    command: dict[str, Any]
    accepted: bool
    events: tuple[dict[str, Any], ...] = ()
    code: str | None = None
    explanation: str | None = None
    rule: str | None = None
    #: The one WorkItem or Mission the Command names, before and after the step (the same
    #: entity on both sides; ``before`` is empty when the step created it, ``after`` empty when
    #: the step names nothing).
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    #: How many Events the log held once the step was done (its last Event's position), so a
    #: view can replay the log to exactly this step.
    log_position: int = 0

    @property
    def subject(self) -> tuple[str, str] | None:
        """``("workItem" | "mission", ID)`` of the entity ``before``/``after`` describe."""
        for side in (self.after, self.before):
            for key in ("workItem", "mission"):
                if key in side:
                    return key, str(side[key])
        return None

    def changes(self) -> list[tuple[str, Any, Any, bool]]:
        """``(field, before, after, changed)`` for each field of the entity, its ID first."""
        keys = list(dict.fromkeys([*self.after, *self.before]))
        return [(k, self.before.get(k), self.after.get(k), self.before.get(k) != self.after.get(k))
                for k in keys]  # fmt: skip

    def summary(self) -> str:
        """One line for a person."""
        if self.accepted:
            kinds = ", ".join(e["kind"] for e in self.events) or "(idempotent retry)"
            return f"#{self.number} {self.at} {self.agent}: {self.kind} → {kinds}"
        return (
            f"#{self.number} {self.at} {self.agent}: {self.kind} ✘ {self.code}: {self.explanation}"
        )

    def _repr_html_(self) -> str:
        """The step drawn in a notebook (without ``%load_ext mwp_local.notebook`` too), by the
        renderer the extension registers for it."""
        from ..render.reprs import RENDERERS

        return str(RENDERERS[("mwp_local.drivers.sandbox", "StepReport")](self))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """The end of a run: Missions and their states, WorkItems by state, counts and times."""

    steps: int
    finished: bool
    missions: dict[str, str]
    work_items: dict[str, int]
    events: int
    rejections: dict[str, int]
    simulated_seconds: float
    wall_seconds: float
    #: What the delivery bus did (None with direct delivery).
    delivery: dict[str, int] | None = None
    #: Why the run stopped before every Mission finished, and what waits for what (None when
    #: it finished, or stopped because ``until`` said so).
    stall: Stall | None = None
    #: Agents that cannot follow the run (every snapshot named to them for these Groups
    #: failed verification): with any, ``finished`` is False whatever the Missions' states.
    stuck: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Every failed attempt, read from the log's ``work.failed`` Events: ``(WorkItem, attempt,
    #: reason)``; an exception raised by a work function or a Worker hook is named in its reason.
    failed_attempts: tuple[tuple[str, int, str], ...] = ()

    def _repr_html_(self) -> str:
        """The summary drawn in a notebook (a table, not the dataclass's repr)."""
        from ..render.html import summary_html

        return summary_html(self)

    def lines(self) -> list[str]:
        """A printable summary."""
        out = [
            f"{'Finished' if self.finished else 'Stopped'} after {self.steps} steps "
            f"({self.simulated_seconds:.0f} s simulated, {self.wall_seconds:.2f} s wall)"
        ]
        out += [f"  Mission {m.rsplit(':', 1)[-1]}: {s}" for m, s in sorted(self.missions.items())]
        out.append(
            "  WorkItems: " + ", ".join(f"{k} {v}" for k, v in sorted(self.work_items.items()))
        )
        out.append(
            f"  Events: {self.events}; rejections: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.rejections.items())) or "none")
        )
        if self.delivery is not None:
            out.append("  Delivery: " + ", ".join(f"{k} {v}" for k, v in self.delivery.items()))
        if self.stall is not None:
            out += ["  " + line for line in self.stall.lines()]
        for work_item, attempt, reason in self.failed_attempts:
            out.append(f"  Failed: {work_item.rsplit(':', 1)[-1]} attempt {attempt}: {reason}")
        for agent, groups in sorted(self.stuck.items()):
            out.append(
                f"  Not settled: {agent} is stuck behind in {', '.join(groups)} (every snapshot "
                "it was named failed verification), so the run is not a success"
            )
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartReport:
    """What ``Sandbox.restart_agent`` did (§6.3, §11.3; MWP-WRK-008, 014)."""

    agent: str
    #: Whether the Worker's local file was deleted first (then everything came from replay).
    deleted_local_file: bool
    #: Events the new runtime folded back from its local store, and Events re-delivered to it
    #: from the Group log (duplicates of stored ones are dropped by its inbox).
    restored_events: int
    redelivered_events: int
    #: Whether the queues stored in the local file equal the ones its Events rebuild.
    stored_queues_matched: bool
    #: The old runtime's per-Group work queues, and the new one's after the rebuild.
    queues_before: dict[str, tuple[Any, ...]]
    queues_rebuilt: dict[str, tuple[Any, ...]]
    #: The new Session Epoch and the Execution Leases its opening revoked.
    session_epoch: int
    revoked_leases: tuple[str, ...]

    def _repr_html_(self) -> str:
        """The restart drawn in a notebook."""
        from ..render.html import restart_html

        return restart_html(self)
