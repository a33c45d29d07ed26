"""Child process for the crash test: applies Commands in group-commit mode, forever.

After each batch's commit returns, it prints the Action IDs it acknowledges (one line per batch)
and flushes, so the parent knows exactly what was acknowledged before it sends SIGKILL.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mwp_local.protocol.timestamps import format_utc, parse_timestamp
from mwp_local.store.sandbox_dir import init_directory, open_directory

START = parse_timestamp("2026-07-15T00:00:00Z").epoch_micros
GROUP = "urn:mwp-local:group:crash"


def main(directory: Path, trial: int) -> None:
    now = parse_timestamp(format_utc(START))
    if not (directory / "organization.json").exists():
        log = init_directory(directory, seed=11, now=now)
        org = log.org
        create = org.command(
            "mission-owner",
            "mission.create",
            {
                "missionId": "urn:mwp-local:mission:crash",
                "groupId": GROUP,
                "coordinatorAgentId": org.get("coordinator").id,
                "objective": "Survive crashes",
                "definitionOfDone": [
                    {"criterionId": "d", "description": "d", "evidenceRequired": ["human_review"]}
                ],
                "budget": {"toolCallLimit": 1000},
                "deadline": "2026-08-01T00:00:00Z",
            },
            issued_at=now.text,
            group_id=GROUP,
        )
        assert log.submit(create, now).ok
    else:
        log = open_directory(directory)
    org = log.org
    batch = 0
    while True:
        batch += 1
        now = parse_timestamp(format_utc(START + (trial * 100_000 + batch) * 1000))
        epoch = log.state.memberships[(GROUP, org.get("mission-owner").id)].epoch
        commands = [
            org.command(
                "mission-owner",
                "message.post",
                {"content": [{"type": "text", "text": f"trial {trial} batch {batch} message {i}"}]},
                issued_at=now.text,
                group_id=GROUP,
                membership_epoch=epoch,
            )
            for i in range(10)
        ]
        outcomes = log.submit_many(commands, now)
        assert all(o.ok for o in outcomes)
        ids = [o.receipt.action_id for o in outcomes]  # type: ignore[union-attr]
        sys.stdout.write(" ".join(ids) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
