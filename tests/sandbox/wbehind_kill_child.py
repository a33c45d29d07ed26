"""The child of the threads-mode write-behind kill -9 test: runs a mission in threads mode
with write-behind on and writes ``ACK {json}`` to stdout for each Command once ``submit`` has
returned (staged, not yet durable), until its parent kills it.

Usage: ``python wbehind_kill_child.py MISSION DIR SEED MAX_STAGED SCALE``.
"""

from __future__ import annotations

import sys

from mwp_local.campaign.acks import record_acknowledgements
from mwp_local.drivers.sandbox import Sandbox


def main(mission: str, directory: str, seed: str, max_staged: str, scale: str) -> None:
    """Run until killed (or until the run ends, then exit without a summary)."""
    sandbox = Sandbox(directory, mission, seed=int(seed), mode="threads")
    sandbox.log.store.max_staged = int(max_staged)  # type: ignore[attr-defined]

    def write(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()  # one line, one write to the pipe: the parent counts it at once

    record_acknowledgements(sandbox.log, write, write_behind=True)
    sandbox.run(timeout_s=600, scale=float(scale))
    sandbox.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
