"""Frozen pictures of the Scheduler for widgets and notebooks.

A snapshot is built from the Scheduler's state at one instant and shares nothing mutable with it:
every field is a frozen dataclass, a tuple, a string or a number, so a widget can keep and draw
it on another thread while the Scheduler moves on. This module only defines the values.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import RequestedUrgency


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueEntrySnapshot:
    """One queued item, at its position within its own Group's queue."""

    #: 1-based position in the Group's service order (eligible items first).
    position: int
    work_item_id: str
    urgency: RequestedUrgency
    priority_class: int
    #: Whether its risk gate is open and its resources are available.
    eligible: bool
    #: Its within-Group score at the snapshot instant.
    score: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSnapshot:
    """One Group's queue, running work and service share."""

    group_id: str
    weight: float
    quota: int | None
    queue: tuple[QueueEntrySnapshot, ...]
    #: WorkItem IDs dispatched and not yet reported finished or requeued.
    running: tuple[str, ...]
    #: Service reported for the Group (microseconds) and its share of all reported service.
    served_us: int
    served_share: float
    #: The Group's weight as a share of the weights of all Groups in the snapshot.
    weight_share: float
    #: The Group's virtual time (pass) and its service debt (+) or credit (-).
    virtual_pass: float
    debt_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotSnapshot:
    """One execution slot as last reported, with the Scheduler's pending request on it."""

    slot_id: str
    work_item_id: str | None
    group_id: str | None
    preemption_requested: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerSnapshot:
    """The whole Scheduler at ``taken_at_us``: Groups (by ID), slots and virtual time."""

    taken_at_us: int
    virtual_time: float
    groups: tuple[GroupSnapshot, ...]
    slots: tuple[SlotSnapshot, ...]

    def group(self, group_id: str) -> GroupSnapshot:
        """The snapshot of one Group; ``KeyError`` if the Scheduler does not know it."""
        for group in self.groups:
            if group.group_id == group_id:
                return group
        raise KeyError(group_id)
