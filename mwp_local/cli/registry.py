"""``mwp-local registry DIR``: the signing-key bindings, in the Registry-fixture format."""

from __future__ import annotations

import argparse
import json

from ..store.sandbox_dir import open_directory
from ._common import directory


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)


def run(args: argparse.Namespace) -> int:
    """Print the Registry (after replaying Agent Card registrations)."""
    log = open_directory(args.dir, read_only=True)
    print(json.dumps(log.state.registry.to_fixture(), indent=2))
    log.store.close()
    return 0
