"""Figures 5 and 7: Artifact blobs and import time (figure 6 is in ``scenario_bench``).

* Figure 5 stores and reads back (verified) Artifact content through
  ``mwp_local.store.blobs.BlobStore`` at 1 MiB and 64 MiB, in GB/s, against hashlib SHA-256
  of the same bytes in the same run: ``put`` as the Sandbox uses it (fsyncs deferred to the
  ``sync`` before the log commit), ``put`` durable on its own (fsyncs before it returns), and
  the verified ``get`` (both digests re-hashed before returning).
* Figure 7 runs ``from mwp_local import Sandbox`` in a fresh interpreter (the time of the
  statement itself); the reference is the same interpreter starting and doing nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import Entry, Measure, Target

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Sizes:
    """Payload sizes and repetitions."""

    blob_sizes: tuple[int, ...]
    blob_reps: int
    import_reps: int


FULL = Sizes(blob_sizes=(MIB, 64 * MIB), blob_reps=7, import_reps=9)
QUICK = Sizes(blob_sizes=(64 * 1024, MIB), blob_reps=1, import_reps=1)


def _label(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size // 1024} KiB"


def _blob_entry(
    name: str,
    size: int,
    values: list[float],
    ceiling: Measure,
    target: Target | None,
    notes: str,
) -> Entry:
    return Entry(
        figure="5",
        name=name,
        unit="GB/s",
        values=values,
        ceiling=ceiling,
        ratio_meaning="share of the same-run SHA-256 rate",
        target=target,
        parameters={"bytes": size},
        notes=notes,
    )


def figure_5(sizes: Sizes) -> list[Entry]:
    """Artifact put and verified get against SHA-256, or pending without the blob store."""
    if importlib.util.find_spec("mwp_local.store.blobs") is None:
        reason = "pending: needs mwp_local.store.blobs"
        return [Entry(figure="5", name="Artifact put / verified get", unit="GB/s", pending=reason)]
    from mwp_local.store.blobs import BlobStore

    entries = []
    for size in sizes.blob_sizes:
        data = os.urandom(size)
        puts, sandbox_puts, gets, sha = [], [], [], []
        for rep in range(sizes.blob_reps):
            # Distinct content each time, so every put really writes a new blob.
            payload = rep.to_bytes(8, "big") + data[8:]
            began = time.perf_counter()
            hashlib.sha256(payload).digest()
            sha.append(size / (time.perf_counter() - began) / 1e9)
            with tempfile.TemporaryDirectory(prefix="mwp-bench-blobs-") as tmp:
                store = BlobStore(Path(tmp) / "blobs")
                began = time.perf_counter()
                ref = store.put(payload)
                puts.append(size / (time.perf_counter() - began) / 1e9)
                began = time.perf_counter()
                store.get(ref.sha256)
                gets.append(size / (time.perf_counter() - began) / 1e9)
                # As a Worker's deliverable is stored during a run: the put defers its fsyncs,
                # and the log store's before_write (BlobStore.sync) makes it durable just before
                # the log commit naming it.
                other = b"\xff" + payload[1:]
                began = time.perf_counter()
                store.put(other, defer_sync=True)
                store.sync()
                sandbox_puts.append(size / (time.perf_counter() - began) / 1e9)
        ceiling = Measure("hashlib SHA-256 of the same bytes", "GB/s", tuple(sha))

        entries += [
            _blob_entry(
                f"Artifact put as the Sandbox uses it, {_label(size)}",
                size,
                sandbox_puts,
                ceiling,
                Target(text="≥ 0.5 of SHA-256", ratio_at_least=0.5),
                "BlobStore.put(defer_sync=True) then BlobStore.sync(), which the log store runs "
                "before the commit naming the blob (docs/durability.md): the blob and index entry "
                "fsynced, then linked into place; sync fsyncs the directories with new entries.",
            ),
            _blob_entry(
                f"Artifact put, durable on its own, {_label(size)}",
                size,
                puts,
                ceiling,
                None,
                "BlobStore.put: both digests, unnamed file (O_TMPFILE), fsync, link, the same for "
                "the index entry, then the directory fsyncs (reported, no target).",
            ),
            _blob_entry(
                f"Artifact verified get, {_label(size)}",
                size,
                gets,
                ceiling,
                Target(text="≥ 0.7 of SHA-256", ratio_at_least=0.70),
                "BlobStore.get: the index entry, one read, size and SHA-256 (the identity "
                "§13.1 asks a retrieval to check) before returning; verify checks BLAKE3 too.",
            ),
        ]
    return entries


#: What a user of the Python API types first (docs/prototyping.md).
SANDBOX_IMPORT = "from mwp_local import Sandbox"

_TIMED_IMPORT = "import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"


def _environment(cache: Path) -> dict[str, str]:
    """A normal interpreter's set-up: bytecode cached (in ``cache``, not in the source tree),
    as it is after any first run on a user's machine."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def _fresh(code: str, env: dict[str, str]) -> float:
    """Run ``code`` in a fresh interpreter and return the float it printed last."""
    out = subprocess.run(
        [sys.executable, "-s", "-c", code], check=True, capture_output=True, text=True, env=env
    )
    return float(out.stdout.strip().splitlines()[-1])


def _startup(env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-s", "-c", "pass"], check=True, env=env)
    return time.perf_counter() - began


def figure_7(sizes: Sizes) -> list[Entry]:
    """``from mwp_local import Sandbox`` in a fresh interpreter (and, for information, the bare
    package root)."""
    with tempfile.TemporaryDirectory(prefix="mwp-bench-pycache-") as cache:
        env = _environment(Path(cache))
        for statement in (SANDBOX_IMPORT, "import mwp_local"):  # warm the bytecode cache
            _fresh(_TIMED_IMPORT.format(statement=statement), env)
        startup = Measure(
            "bare interpreter start", "s", tuple(_startup(env) for _ in range(sizes.import_reps))
        )
        sandbox, package = [], []
        for _ in range(sizes.import_reps):  # interleaved, so both see the same load
            sandbox.append(_fresh(_TIMED_IMPORT.format(statement=SANDBOX_IMPORT), env))
            package.append(_fresh(_TIMED_IMPORT.format(statement="import mwp_local"), env))
    return [
        Entry(
            figure="7",
            name=SANDBOX_IMPORT,
            unit="s",
            values=sandbox,
            ceiling=startup,
            ratio_meaning="import time / a bare interpreter's start-up time",
            target=Target(
                text="≤ 0.3 s and ≤ 10× a bare interpreter start", at_most=0.3, ratio_at_most=10
            ),
            notes=(
                "The import statement alone, in a fresh interpreter with bytecode cached (as "
                "after any first run): the protocol core, the Authority, the agents and the "
                "drivers; DuckDB and pyarrow load when the first log is opened."
            ),
        ),
        Entry(
            figure="7",
            name="import mwp_local (for information)",
            unit="s",
            values=package,
            ceiling=startup,
            ratio_meaning="import time / a bare interpreter's start-up time",
            notes="The package root loads nothing else; each public name loads on first use.",
        ),
    ]
