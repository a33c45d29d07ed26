"""A sandbox directory on disk: its Organization, development keys and Group log.

Layout (``DESIGN.md`` decision 6)::

    DIR/organization.json   Principals, public keys, capabilities, the seed
    DIR/keys/               development private keys (clearly marked; derived from the seed)
    DIR/group.duckdb        the authoritative Group log, receipts, rejections, projections
    DIR/blobs/              Artifact content (content-addressed)
    DIR/export/             Parquet exports

``init_directory`` creates it and registers every Agent Card and opens every Agent's first
Session, so the log starts with those Organization-scoped Events.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..authority import AuthorityConfig
from ..authority.organization import (
    DEV_KEY_WARNING,
    Organization,
    organization_from_json,
    organization_to_json,
)
from ..protocol.b64 import b64url_encode
from ..protocol.ed25519 import derive_seed
from ..protocol.timestamps import Timestamp
from .duckdb_log import DuckDBLogStore
from .group_log import GroupLog

#: The Principals ``mwp-local init`` creates when none are given.
DEFAULT_AGENTS: dict[str, dict[str, Any]] = {
    "coordinator": {
        "capabilities": [("mwp.coordination", "1.0.0"), ("mwp.review", "1.0.0")],
        "max_concurrency": 4,
    },
    "worker-1": {
        "capabilities": [("mwp.software.implement", "1.0.0"), ("mwp.software.test", "1.0.0")],
        "max_concurrency": 2,
    },
    "worker-2": {
        "capabilities": [("mwp.software.implement", "1.0.0"), ("mwp.software.analyse", "1.0.0")],
        "max_concurrency": 2,
    },
    "reviewer": {"capabilities": [("mwp.review", "1.0.0")], "max_concurrency": 1},
}
DEFAULT_HUMANS = ("mission-owner",)

LOG_FILE = "group.duckdb"
ORGANIZATION_FILE = "organization.json"


def init_directory(
    path: Path,
    *,
    seed: int,
    now: Timestamp,
    agents: Mapping[str, Mapping[str, Any]] | None = None,
    humans: tuple[str, ...] = DEFAULT_HUMANS,
    sql_external_access: bool = False,
    organization_id: str | None = None,
) -> GroupLog:
    """Create a sandbox directory and bootstrap its Organization into a new Group log (whose
    queries may read files outside the directory only with ``sql_external_access``). The
    Organization ID defaults to the seed's (``protocol.ids.sandbox_organization_id``); a
    Sandbox passes the one its seed and mission derive."""
    path.mkdir(parents=True, exist_ok=True)
    if (path / ORGANIZATION_FILE).exists() or (path / LOG_FILE).exists():
        raise FileExistsError(f"{path} already holds a sandbox")
    org = Organization.create(
        seed, humans=humans, agents=agents or DEFAULT_AGENTS, organization_id=organization_id
    )
    _write_organization(path, org)
    log = GroupLog(org, DuckDBLogStore(path / LOG_FILE, external_access=sql_external_access))
    bootstrap(log, now)
    return log


def init_like(path: Path, other: Path) -> GroupLog:
    """Create a sandbox directory of the Organization of the sandbox ``other`` (its seed, its
    Principals and keys, its Organization ID) with an empty log: the directory to
    ``mwp-local import`` an export of ``other`` into, whose Agent Cards and Sessions come in
    with it. (A bootstrapped ``init`` of another Organization cannot take that export in: its
    Agent Cards are of another Organization, and the live Authority would refuse them.)"""
    org = load_organization(other)
    path.mkdir(parents=True, exist_ok=True)
    if (path / ORGANIZATION_FILE).exists() or (path / LOG_FILE).exists():
        raise FileExistsError(f"{path} already holds a sandbox")
    _write_organization(path, org)
    return GroupLog(org, DuckDBLogStore(path / LOG_FILE))


def _write_organization(path: Path, org: Organization) -> None:
    """``organization.json``, the development keys and the blob and export folders."""
    (path / ORGANIZATION_FILE).write_text(json.dumps(organization_to_json(org), indent=2) + "\n")
    keys = path / "keys"
    keys.mkdir(exist_ok=True)
    (keys / "README.txt").write_text(DEV_KEY_WARNING + "\n")
    for member in org.members.values():
        name = member.id.rsplit(":", 1)[-1]
        (keys / f"{member.type}-{name}.json").write_text(
            json.dumps(
                {
                    "warning": DEV_KEY_WARNING,
                    "principal": member.actor,
                    "keyId": member.key_id,
                    "seed": b64url_encode(derive_seed(org.seed, member.id)),
                    "publicKey": member.public_key,
                },
                indent=2,
            )
            + "\n"
        )
    for sub in ("blobs", "export"):
        (path / sub).mkdir(exist_ok=True)


def bootstrap(log: GroupLog, now: Timestamp) -> None:
    """Register every Agent Card and open every Agent's first Session."""
    org = log.org
    commands: list[bytes] = []
    for agent in org.agents():
        card = org.agent_card(agent, issued_at=now.text)
        commands.append(
            org.command(
                org.control_plane,
                "ext.missionweaveprotocol.registry.agent_card_register",
                {"agentCard": card},
                issued_at=now.text,
            )
        )
        commands.append(
            org.command(
                org.control_plane,
                "ext.missionweaveprotocol.identity.session_open",
                {"agentId": agent.id},
                issued_at=now.text,
            )
        )
    for outcome in log.submit_many(commands, now):
        if not outcome.ok:
            raise RuntimeError(f"bootstrap failed: {outcome.error!r}")  # type: ignore[union-attr]


def load_organization(path: Path) -> Organization:
    """The Organization of a sandbox directory."""
    file = path / ORGANIZATION_FILE
    if not file.exists():
        raise FileNotFoundError(f"{path} is not a sandbox directory (no {ORGANIZATION_FILE})")
    return organization_from_json(json.loads(file.read_text()))


def open_directory(
    path: Path,
    *,
    read_only: bool = False,
    config: AuthorityConfig | None = None,
    sql_external_access: bool = False,
    snapshot: bool = True,
) -> GroupLog:
    """Open an existing sandbox directory (replaying its log, from its state snapshot plus
    the tail unless ``snapshot`` is False: ``GroupLog``)."""
    org = load_organization(path)
    store = DuckDBLogStore(
        path / LOG_FILE, read_only=read_only, external_access=sql_external_access
    )
    return GroupLog(org, store, config, snapshot=snapshot)
