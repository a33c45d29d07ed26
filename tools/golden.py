"""Golden digests: the same seed must give the same bytes.

Runs every sample mission (and the §22 POC) in step mode into a fresh directory and digests what
the run wrote: every table of every DuckDB file (the Group log's Events, receipts, rejections and
projections; each Worker's local file), every Artifact blob and every other file (Organization,
keys, the POC's side files). The digests live in ``tools/golden.json``; a refactor must leave
them alone, and a change that alters what a run writes on purpose updates them (``--update``) in
the same commit and says why.

    python tools/golden.py            # check every sample against tools/golden.json
    python tools/golden.py --update   # record them anew
    python tools/golden.py --only learn --only poc

A DuckDB file is digested by content, not by its bytes (DuckDB's block layout is not part of
what a run means): per table its columns and types, then its rows in a total order. A log's state
snapshot (``*.state-snapshot``, ``mwp_local/store/state_snapshot.py``) is left out: it is a cache
of a replay of the log (written on close once the log is large enough), not part of what a run
means, and a full replay gives the same state without it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import decimal
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tools" / "golden.json"

#: Each sample and the command line that runs it into DIR (step mode: deterministic).
SAMPLES: dict[str, list[str]] = {
    name: ["run", f"sample_missions/{name}.toml", "--mode", "step", "--dir"]
    for name in ("learn", "flagship", "child", "retries", "delivery", "campaign", "scale")
}
SAMPLES["poc"] = ["poc", "--mode", "step", "--dir"]
SAMPLES["walkthrough"] = []  # sample_missions/walkthrough.py DIR

#: The samples too slow for the inner loop (the suite runs them in its slow tier).
SLOW = frozenset({"scale"})


def _value(value: Any) -> Any:
    """A JSON-able, exact rendering of one DuckDB value."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return {"time": value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"interval": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return value


def digest_duckdb(path: Path) -> dict[str, str]:
    """Per table of a DuckDB file: sha256 over its columns, types and rows in a total order."""
    import duckdb

    out: dict[str, str] = {}
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_type = 'BASE TABLE' AND table_schema = 'main' ORDER BY table_name"
            ).fetchall()
        ]
        for table in tables:
            h = hashlib.sha256()
            columns = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'main' AND table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
            h.update(json.dumps(columns).encode())
            rows = con.execute(f'SELECT * FROM "{table}" ORDER BY ALL').fetchall()
            for row in rows:
                h.update(json.dumps(_value(list(row)), sort_keys=True).encode())
                h.update(b"\n")
            out[f"{table} ({len(rows)} rows)"] = h.hexdigest()
    finally:
        con.close()
    return out


def digest_directory(directory: Path) -> dict[str, Any]:
    """Every file a run wrote under DIRECTORY: DuckDB files by table, the rest by content."""
    result: dict[str, Any] = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        rel = path.relative_to(directory).as_posix()
        if rel.endswith((".duckdb.wal", ".state-snapshot")) or "/tmp/" in f"/{rel}":
            continue
        if rel.endswith(".duckdb"):
            result[rel] = digest_duckdb(path)
        else:
            result[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def run_sample(name: str, directory: Path) -> None:
    """Run one sample into DIRECTORY (a path that does not exist yet)."""
    if name == "walkthrough":
        argv = [sys.executable, "sample_missions/walkthrough.py", str(directory)]
    else:
        argv = [sys.executable, "-m", "mwp_local.cli", *SAMPLES[name], str(directory)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{name}: {' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )


def sample_digest(name: str) -> dict[str, Any]:
    """Run one sample in a fresh temporary directory and digest what it wrote."""
    with tempfile.TemporaryDirectory(prefix=f"mwp-golden-{name}-") as tmp:
        directory = Path(tmp) / "run"
        run_sample(name, directory)
        return digest_directory(directory)


def differences(expected: dict[str, Any], actual: dict[str, Any], prefix: str = "") -> list[str]:
    """Human-readable differences between two digest trees."""
    lines = []
    for key in sorted(set(expected) | set(actual)):
        where = f"{prefix}{key}"
        if key not in actual:
            lines.append(f"missing: {where}")
        elif key not in expected:
            lines.append(f"new: {where}")
        elif isinstance(expected[key], dict) and isinstance(actual[key], dict):
            lines.extend(differences(expected[key], actual[key], f"{where} / "))
        elif expected[key] != actual[key]:
            lines.append(f"changed: {where}")
    return lines


def compute(names: Iterable[str], jobs: int) -> dict[str, Any]:
    names = list(names)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return dict(zip(names, pool.map(sample_digest, names), strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="record the digests anew")
    parser.add_argument("--only", action="append", choices=sorted(SAMPLES), help="these samples")
    parser.add_argument("--skip-slow", action="store_true", help=f"skip {sorted(SLOW)}")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    names = args.only or [n for n in SAMPLES if not (args.skip_slow and n in SLOW)]
    recorded = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    actual = compute(names, args.jobs)
    if args.update:
        recorded.update(actual)
        GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        print(f"recorded {', '.join(names)} in {GOLDEN.relative_to(ROOT)}")
        return 0
    failed = False
    for name in names:
        if name not in recorded:
            print(f"{name}: no recorded digest (run with --update)")
            failed = True
            continue
        diff = differences(recorded[name], actual[name])
        print(f"{name}: {'same bytes' if not diff else 'DIFFERENT'}")
        for line in diff:
            print(f"  {line}")
        failed = failed or bool(diff)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
