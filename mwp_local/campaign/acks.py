"""A record of acknowledged Commands that survives ``kill -9``.

``record_acknowledgements(log, write)`` wraps one ``GroupLog``'s ``submit`` so that, after the
durable commit has returned (``GroupLog.submit`` commits the outcome in one store transaction
before it returns, and write-behind is turned off for that log), one line naming the Command
and its outcome is written with ``write``. A Command is acknowledged to its client only at that
point, so every acknowledged Command must be in the log however the process dies afterwards;
the invariant ``acknowledged_present`` checks it.

With ``write_behind=True`` write-behind stays on: ``submit`` returns once the outcome is staged,
and each line also says ``"write_behind": N``, the store's ``max_staged``: however the process
dies, at most N such acknowledged Commands may be missing from the log
(``docs/durability.md``), which ``acknowledged_present`` checks as well.
The line is written by one ``write`` call; the reader ignores a torn last line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from ..authority import Accepted, Rejected
from ..protocol.timestamps import Timestamp
from ..store.group_log import GroupLog

PREFIX = "ACK "


def ack_record(outcome: Any) -> dict[str, Any] | None:
    """What to acknowledge for one outcome (None when it names no actor and Action ID)."""
    if isinstance(outcome, Accepted) and outcome.receipt is not None:
        receipt = outcome.receipt
        return {"actor": receipt.actor_id, "action": receipt.action_id, "outcome": "accepted"}
    if isinstance(outcome, Rejected):
        actor, action = outcome.record.actor_id, outcome.record.action_id
        if actor and action:
            return {"actor": actor, "action": action, "outcome": "rejected"}
    return None


def record_acknowledgements(
    log: GroupLog, write: Callable[[str], None], *, write_behind: bool = False
) -> None:
    """From now on, write ``ACK {json}`` for every Command ``log.submit`` has committed (with
    ``write_behind``: staged, within the store's bound)."""
    original = log.submit
    lock = threading.Lock()
    bound = getattr(log.store, "max_staged", None) if write_behind else None
    # An acknowledgement promises durability: no staging, unless a bound is promised instead
    # (a store without ``max_staged`` commits at once anyway).
    log.allow_write_behind = bound is not None

    def submit(data: bytes | str, now: Timestamp) -> Any:
        outcome = original(data, now)  # returns only after the commit (or staging)
        record = ack_record(outcome)
        if record is not None and bound is not None:
            record["write_behind"] = getattr(log.store, "max_staged", bound)
        if record is not None:
            line = PREFIX + json.dumps(record, sort_keys=True) + "\n"
            with lock:
                write(line)
        return outcome

    setattr(log, "submit", submit)  # noqa: B010  (an instance hook; the class is untouched)


def parse_acks(lines: list[str]) -> list[dict[str, str]]:
    """The acknowledgements among output lines (a torn last line is skipped)."""
    out = []
    for line in lines:
        if not line.startswith(PREFIX) or not line.endswith("\n"):
            continue
        try:
            out.append(json.loads(line[len(PREFIX) :]))
        except json.JSONDecodeError:
            continue
    return out
