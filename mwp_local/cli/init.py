"""``mwp-local init DIR [--seed N]``: a new sandbox with its Organization and keys."""

from __future__ import annotations

import argparse

from ..store.sandbox_dir import init_directory
from ._common import add_now, directory, fail, now_from


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser, new=True)
    parser.add_argument("--seed", type=int, default=0, help="seed of every key (default 0)")
    add_now(parser)


def run(args: argparse.Namespace) -> int:
    """Create the directory, its Organization, keys and bootstrapped log."""
    try:
        log = init_directory(args.dir, seed=args.seed, now=now_from(args))
    except FileExistsError as exc:
        return fail(str(exc))
    print(f"Created sandbox {args.dir} (seed {args.seed})")
    for member in sorted(log.org.members.values(), key=lambda m: m.id):
        print(f"  {member.type:<8} {member.id}")
    print(f"Log: {log.store.event_count()} Events (Agent Cards registered, Sessions opened)")
    print(f"Development keys (not secret!) are in {args.dir / 'keys'}")
    log.store.close()
    return 0
