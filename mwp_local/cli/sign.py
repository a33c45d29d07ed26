"""``mwp-local sign DIR --as PRINCIPAL FILE``: sign an unsigned Command as a sandbox Principal.

Missing envelope members are filled in for you: ``protocolVersion``, ``actionId`` (derived from
the content), ``correlationId``, ``issuedAt`` (now) and, for a Command in an existing Group, the
Principal's current Session, Membership and Coordinator Epochs (``--no-fill`` keeps the Command
exactly as written, to experiment with stale epochs).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mwp_local.protocol.jcs import canonicalize

from ..protocol.ids import derived_uuid
from ..store.sandbox_dir import open_directory
from ._common import add_now, directory, input_or_stdin, now_from


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)
    parser.add_argument("--as", dest="principal", required=True, help="name or ID of the signer")
    parser.add_argument(
        "file", type=input_or_stdin, help="the unsigned Command (JSON); - for stdin"
    )
    parser.add_argument("--no-fill", action="store_true", help="do not fill in epochs")
    add_now(parser)


def fill(log: Any, member: Any, doc: dict[str, Any], now: str, epochs: bool) -> dict[str, Any]:
    """Complete an unsigned Command's envelope for ``member``."""
    doc = {k: v for k, v in doc.items() if k != "signature"}
    doc.setdefault("protocolVersion", "0.1")
    doc["actor"] = member.actor
    doc.setdefault("issuedAt", now)
    doc.setdefault("payload", {})
    content = canonicalize({k: v for k, v in doc.items() if k != "actionId"}).decode()
    doc.setdefault("actionId", derived_uuid(member.organization_id, "cli", member.id, content))
    doc.setdefault(
        "correlationId", derived_uuid(member.organization_id, "cli-correlation", doc["actionId"])
    )
    group = doc.get("groupId")
    state = log.state
    if epochs and group in state.groups:
        if member.type == "agent" and member.id in state.agents:
            doc.setdefault("sessionEpoch", state.agents[member.id].session_epoch)
        membership = state.memberships.get((group, member.id))
        if membership is not None and member.type in ("agent", "human"):
            doc.setdefault("membershipEpoch", membership.epoch)
        mission = state.missions[state.groups[group].mission_id]
        if member.id == mission.coordinator_agent_id:
            doc.setdefault("coordinatorEpoch", mission.coordinator_epoch)
    return doc


def run(args: argparse.Namespace) -> int:
    """Print the signed Command (canonical JSON) on stdout."""
    text = sys.stdin.read() if str(args.file) == "-" else args.file.read_text()
    log = open_directory(args.dir, read_only=True)
    try:
        member = log.org.get(args.principal)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    now = now_from(args).text
    doc = fill(log, member, json.loads(text), now, not args.no_fill)
    signed = log.org.sign("command", member, doc)
    sys.stdout.write(canonicalize(signed).decode() + "\n")
    log.store.close()
    return 0
