"""Rich HTML representations for notebooks: Sandbox, Mission, WorkItem, Event, Artifact,
rejection, step, run summary and query result (a pyarrow Table).

The model classes stay free of notebook code: ``register(ipython)`` (called by
``%load_ext mwp_local.notebook``) teaches IPython's HTML formatter to draw them, by type name, so
nothing is imported until a value is shown. Event documents and Artifact manifests are plain
dicts on the wire; wrap one in ``Event(...)`` or ``Artifact(...)`` to draw it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from .html import STYLE, rejection_html, step_html, summary_html, table_html
from .svg import STATE_COLOURS


def _short(identifier: Any) -> str:
    return str(identifier or "").rsplit(":", 1)[-1]


def _badge(state: str) -> str:
    colour = STATE_COLOURS.get(state, "#eee")
    style = f"background:{colour};color:#1a1a1a;padding:1px 6px;border-radius:6px"
    return f'<span style="{style}">{escape(state)}</span>'


def _table(rows: Mapping[str, Any]) -> str:
    cells = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in rows.items())
    return f"<table>{cells}</table>"


def _box(title: str, body: str) -> str:
    return f'{STYLE}<div class="mwp"><b>{title}</b>{body}</div>'


def sandbox_html(sandbox: Any) -> str:
    """A Sandbox: its mission file, mode, steps, Missions and WorkItems by state."""
    summary = sandbox.summary()
    missions = "".join(
        f"<li>{escape(_short(m))}: {_badge(s)}</li>" for m, s in sorted(summary.missions.items())
    )
    items = ", ".join(f"{escape(k)} {v}" for k, v in sorted(summary.work_items.items()))
    return _box(
        "Sandbox",
        _table(
            {
                "directory": f"<code>{escape(str(sandbox.directory))}</code>",
                "mode": escape(sandbox.mode),
                "seed": sandbox.seed,
                "steps": summary.steps,
                "Events": summary.events,
                "Missions": f"<ul>{missions or '<li>none yet</li>'}</ul>",
                "WorkItems": items or "none yet",
                "rejections": escape(str(summary.rejections or "none")),
            }
        ),
    )


def mission_html(mission: Any) -> str:
    """A Mission record (§7.1)."""
    return _box(
        f"Mission <code>{escape(mission.mission_id)}</code>",
        _table(
            {
                "state": _badge(str(mission.state)),
                "revision": mission.revision,
                "objective": escape(mission.objective),
                "Coordinator": escape(_short(mission.coordinator_agent_id)),
                "Coordinator Epoch": mission.coordinator_epoch,
                "deadline": escape(mission.deadline),
                "Group": f"<code>{escape(mission.group_id)}</code>",
            }
        ),
    )


def work_item_html(item: Any) -> str:
    """A WorkItem record (§10.2): state, owner, epoch, leases, contract goal."""
    return _box(
        f"WorkItem <code>{escape(item.work_item_id)}</code>",
        _table(
            {
                "state": _badge(str(item.state)),
                "revision": item.revision,
                "goal": escape(str(item.contract.get("goal", ""))),
                "owner": escape(_short((item.owner or {}).get("agentId"))) or "—",
                "Ownership Epoch": item.ownership_epoch,
                "Execution Lease": f"<code>{escape(item.execution_lease_id or '—')}</code>",
                "attempts": item.attempts,
                "Artifacts": len(item.artifact_hashes),
            }
        ),
    )


class Event:
    """An Event document, drawn as HTML in a notebook."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def _repr_html_(self) -> str:
        doc = self.document
        payload = escape(json.dumps(doc.get("payload", {}), indent=1))
        return _box(
            f"Event <code>#{doc.get('sequence', '–')} {escape(doc['kind'])}</code>",
            _table(
                {
                    "Event ID": f"<code>{escape(doc['eventId'])}</code>",
                    "Group": escape(_short(doc.get("groupId"))) or "Organization",
                    "actor": escape(_short(doc.get("actor", {}).get("id"))),
                    "occurred at": escape(doc.get("occurredAt", "")),
                    "cause": escape(json.dumps(doc.get("cause", {}))),
                }
            )
            + f"<details><summary>payload</summary><pre>{payload}</pre></details>",
        )


class Artifact:
    """An Artifact manifest (§13.1), drawn as HTML in a notebook."""

    def __init__(self, manifest: Mapping[str, Any]) -> None:
        self.manifest = manifest

    def _repr_html_(self) -> str:
        m = self.manifest
        return _box(
            f"Artifact <code>{escape(m['contentHash'])}</code>",
            _table(
                {
                    "media type": escape(m.get("mediaType", "")),
                    "size": f"{m.get('sizeBytes')} bytes",
                    "producer": escape(_short(m.get("producer", {}).get("agentId"))),
                    "WorkItem": escape(_short(m.get("workItemId"))),
                    "sources": ", ".join(escape(s[:19]) for s in m.get("sourceArtifactHashes", []))
                    or "none",
                    "classification": escape(m.get("classification", "")),
                    "URI (a hint, never identity)": f"<code>{escape(m.get('uri', ''))}</code>",
                }
            ),
        )


def rejected_html(outcome: Any) -> str:
    """A refused Command (an ``authority.Rejected``) or a ``ProtocolError``."""
    error = getattr(outcome, "error", outcome)
    return _box("", rejection_html(error.code.value, error.explanation, error.rule))


#: (module, class name) → renderer; registered by name so nothing is imported early.
RENDERERS: dict[tuple[str, str], Any] = {
    ("mwp_local.drivers.sandbox", "Sandbox"): sandbox_html,
    ("mwp_local.drivers.sandbox", "StepReport"): step_html,
    ("mwp_local.drivers.reports", "StepReport"): step_html,
    ("mwp_local.drivers.reports", "RunSummary"): summary_html,
    # query results (``sb.sql(...)``, a bench's ``sql``): an HTML table, not pyarrow's dump
    ("pyarrow.lib", "Table"): table_html,
    ("mwp_local.authority.model", "MissionRecord"): mission_html,
    ("mwp_local.authority.model", "WorkItemRecord"): work_item_html,
    ("mwp_local.authority.pipeline", "Rejected"): rejected_html,
    ("mwp_local.protocol.errors", "ProtocolError"): rejected_html,
}


def register(ipython: Any) -> None:
    """Teach IPython's HTML formatter the renderers above."""
    formatter = ipython.display_formatter.formatters["text/html"]
    for (module, name), render in RENDERERS.items():
        formatter.for_type_by_name(module, name, render)
