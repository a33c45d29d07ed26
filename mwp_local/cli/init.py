"""``mwp-local init DIR [--seed N]``: a new sandbox with its Organization and keys; ``--like
OTHER``: a sandbox of OTHER's Organization with an empty log, to import OTHER's export into."""

from __future__ import annotations

import argparse

from ..protocol.ids import is_protocol_id
from ..store.sandbox_dir import init_directory, init_like
from ._common import add_now, directory, fail, now_from, sandbox_directory


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser, new=True)
    parser.add_argument("--seed", type=int, default=0, help="seed of every key (default 0)")
    parser.add_argument(
        "--organization",
        type=organization_id,
        help="the Organization ID (default urn:mwp-local:organization:seed-N, from the seed)",
    )
    parser.add_argument(
        "--like",
        type=sandbox_directory,
        metavar="OTHER",
        help="a sandbox of OTHER's Organization (its seed, Principals, keys) with an empty log, "
        "to `import` OTHER's export into (no --seed, --organization or --now)",
    )
    add_now(parser)


def organization_id(text: str) -> str:
    """An ``--organization`` value: an absolute URI (§2)."""
    if not is_protocol_id(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an identifier; an Organization ID is an absolute URI such as "
            "urn:example:organization:acme (§2)"
        )
    return text


def run(args: argparse.Namespace) -> int:
    """Create the directory, its Organization, keys and bootstrapped log."""
    if args.like is not None:
        return _like(args)
    try:
        log = init_directory(
            args.dir, seed=args.seed, now=now_from(args), organization_id=args.organization
        )
    except FileExistsError as exc:
        return fail(str(exc))
    print(f"Created sandbox {args.dir} (seed {args.seed}, Organization {log.org.organization_id})")
    for member in sorted(log.org.members.values(), key=lambda m: m.id):
        print(f"  {member.type:<8} {member.id}")
    print(f"Log: {log.store.event_count()} Events (Agent Cards registered, Sessions opened)")
    print(f"Development keys (not secret!) are in {args.dir / 'keys'}")
    log.store.close()
    return 0


def _like(args: argparse.Namespace) -> int:
    if args.seed != 0 or args.organization is not None or args.now is not None:
        return fail(
            "--like takes the seed, the Organization and the Principals from the other "
            "sandbox; leave out --seed, --organization and --now"
        )
    try:
        log = init_like(args.dir, args.like)
    except FileExistsError as exc:
        return fail(str(exc))
    print(
        f"Created sandbox {args.dir} (seed {log.org.seed}, Organization "
        f"{log.org.organization_id}, like {args.like}) with an empty log: "
        f"`mwp-local import {args.dir} FILE.jsonl` takes in an export of {args.like}"
    )
    log.store.close()
    return 0
