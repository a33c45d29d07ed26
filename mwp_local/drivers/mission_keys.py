"""Every key a mission file may hold, table by table, with what it means: the one table the
mission-file checker holds a file to (an unknown key or table is an error with a did-you-mean),
the Python authoring classes mirror (``drivers.scenario``) and ``docs/mission-files.md`` prints
(``render_markdown``; a test keeps the page equal to it).

Data and two small functions; nothing here reads a file or builds a spec.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..delivery.config import DELIVERY_KEYS


@dataclass(frozen=True, slots=True)
class Row:
    """Keys of one table documented together, and what they mean."""

    keys: tuple[str, ...]
    meaning: str


@dataclass(frozen=True, slots=True)
class Table:
    """One kind of table of a mission file: how it is written, and its keys."""

    #: ``"sandbox"``, ``"agents"``, ``"missions.work"``, ...: the key path from the top.
    path: str
    #: How the table is written in TOML (``[sandbox]``, ``[[missions.work]]``, ``behaviour``).
    header: str
    rows: tuple[Row, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key the table may hold, in documentation order."""
        return tuple(k for row in self.rows for k in row.keys)


#: The budget dimensions a mission file may limit (the six of §12).
BUDGET_DIMENSIONS = (
    "financial",
    "model_tokens",
    "tool_calls",
    "compute_seconds",
    "wall_clock_seconds",
    "side_effects",
)


#: The tables of a mission file, in documentation order.
TABLES: tuple[Table, ...] = (
    Table(
        "",
        "(top level)",
        (
            Row(
                ("name",),
                "the run's name, part of its Organization ID (default: `mission`, whether the "
                "Missions come from a file or from Python)",
            ),
            Row(
                ("sandbox", "agents", "missions", "faults", "delivery"),
                "the tables below; `[[missions]]` is required",
            ),
        ),
    ),
    Table(
        "sandbox",
        "`[sandbox]`",
        (
            Row(
                ("seed", "start", "organization"),
                "the seed of keys and interleavings; the virtual start instant; the Organization "
                "ID (optional: by default derived from the seed, the `name` and the Missions as "
                "checked (every default filled in, so spelling one out changes nothing, and a "
                "file and the same `Scenario` in Python are the same Organization and write the "
                "same bytes), so every sandbox is its own Organization and shares no identifier "
                "with another, §2)",
            ),
        ),
    ),
    Table(
        "agents",
        "`[[agents]]`",
        (
            Row(
                ("name", "capabilities", "max_concurrency"),
                "an Agent: capabilities as `id@version` (a semantic version), its slots",
            ),
            Row(("behaviour",), "a table: how a simulated Agent performs (next row)"),
        ),
    ),
    Table(
        "agents.behaviour",
        "`behaviour`",
        (
            Row(
                ("speed", "failure_rate", "block_rate", "jitter", "reject_rate"),
                "work speed; chances of failing and blocking an attempt; duration jitter; as "
                "a reviewer, the chance its assessment finds the work lacking",
            ),
        ),
    ),
    Table(
        "missions",
        "`[[missions]]`",
        (
            Row(
                ("id", "objective", "owner", "coordinator", "deadline", "budget"),
                "a root Mission; budget dimensions are the six of §12 (`budget` row)",
            ),
            Row(
                ("approval",),
                "the MissionOwner's script: `approve`, `request_changes_once` or `cancel`",
            ),
            Row(
                ("starts_after", "cancel_after"),
                "when the owner creates it; when the owner cancels it",
            ),
            Row(
                ("coordinator_fails_after", "coordinator_returns_after", "standby_coordinator"),
                "the Coordinator stops renewing (and maybe comes back, stale); the Agent the "
                "owner appoints under a higher Coordinator Epoch",
            ),
            Row(("work",), "its WorkItems: `[[missions.work]]` tables (at least one)"),
        ),
    ),
    Table(
        "budget",
        "`budget`",
        (Row(BUDGET_DIMENSIONS, "the limits of a Mission's or a WorkItem's budget (§12)"),),
    ),
    Table(
        "missions.work",
        "`[[missions.work]]`",
        (
            Row(
                ("id", "goal", "capability", "duration", "budget"),
                "a WorkItem and its Work Contract's essentials; some Agent must offer the "
                "capability",
            ),
            Row(
                ("depends_on", "discovered_after"),
                "dependencies (`name-*`: a whole family); work the Coordinator only discovers "
                "once those are verified",
            ),
            Row(
                ("count",),
                "a family of `count` WorkItems `id-1` … `id-n` (`{n}` in text fields is the index)",
            ),
            Row(
                ("urgency", "risk", "approval", "deadline"),
                "`routine`…`critical` (urgent work is offered to several Workers at once); "
                "risk class; `human_required` execution approval",
            ),
            Row(
                ("checkpoints", "max_attempts"),
                "checkpoints per attempt; the retry policy's attempts",
            ),
            Row(
                ("reviewed_by",),
                "a reviewer Agent whose signed assessment the review needs (§13.2 step 3)",
            ),
            Row(
                ("ambiguous", "clarification"),
                "an essential ambiguity left in the first contract, and the corrected "
                "contract's answer (MWP-WRK-002)",
            ),
            Row(
                ("media_type",),
                "the media type of the deliverable the Work Contract requires (default "
                "`text/markdown`); review accepts only an Artifact of that type",
            ),
            Row(("child",), "a table making this WorkItem a child Mission (next row)"),
        ),
    ),
    Table(
        "missions.work.child",
        "`[missions.work.child]`",
        (
            Row(
                ("id", "objective", "coordinator", "deadline", "budget", "work"),
                "the child Mission (§14), owned by the parent's Coordinator; its budget fits "
                "in the parent WorkItem's; its `work` tables are WorkItems as above",
            ),
            Row(
                ("child_failure_policy",),
                "if the child Mission fails, its parent WorkItem stays `blocked` (`block`, the "
                "default) or fails too (`fail`)",
            ),
        ),
    ),
    Table(
        "faults",
        "`[[faults]]`",
        (
            Row(
                ("agent", "kind", "at", "for"),
                "`pause` (for a while) or `crash` (for good): the agent stops acting; Events "
                "still reach it",
            ),
        ),
    ),
    Table(
        "delivery",
        "`[delivery]`",
        (
            Row(
                DELIVERY_KEYS,
                "Events through the in-process delivery bus, with seeded faults "
                "([delivery.md](delivery.md))",
            ),
        ),
    ),
    Table(
        "delivery.windows",
        "`[[delivery.disconnects]]`, `[[delivery.outages]]`",
        (Row(("at", "for", "agent", "grace"), "a disconnection or an outage window"),),
    ),
)

_BY_PATH = {t.path: t for t in TABLES}


def table(path: str) -> Table:
    """The table at ``path`` (``"missions.work"``, ...)."""
    return _BY_PATH[path]


def suggestion(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_keys(raw: Mapping[str, Any], path: str) -> list[str]:
    """A message for each key of ``raw`` the table at ``path`` does not have (sorted), each
    with the closest known key when one is close."""
    allowed = table(path).keys
    out = []
    for key in sorted(k for k in raw if k not in allowed):
        kind = "table" if isinstance(raw[key], dict | list) and path == "" else "key"
        out.append(f"unknown {kind} '{key}'{suggestion(key, allowed)}")
    return out


def render_markdown() -> str:
    """The key table of ``docs/mission-files.md``, from ``TABLES``."""
    lines = ["| table | key | meaning |", "| --- | --- | --- |"]
    for t in TABLES:
        for n, row in enumerate(t.rows):
            keys = ", ".join(f"`{k}`" for k in row.keys)
            lines.append(f"| {t.header if n == 0 else ''} | {keys} | {row.meaning} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "BUDGET_DIMENSIONS",
    "TABLES",
    "Row",
    "Table",
    "render_markdown",
    "suggestion",
    "table",
    "unknown_keys",
]
