"""``mwp-local sql DIR "QUERY"``: query the log's documented views (read-only).

The default output is an aligned table for reading: a value longer than the column width is cut
and ends in ``…`` (a note under the table says so), and NULL prints as ``NULL``.
``--format csv|json|markdown`` prints every value whole (``json``: one JSON object per line,
as ``--json``). Queries reach only the sandbox's own files unless ``--allow-external-access``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from datetime import date, datetime, timedelta
from typing import Any

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.views import lag_note, sql

from ._common import analysis_directory, fail, name_value

#: The widest a column gets in the table output; longer values are cut and marked.
WIDTH = 60
CUT = "…"
FORMATS = ("table", "csv", "json", "markdown")


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument(
        "dir",
        type=analysis_directory,
        metavar="DIR",
        help="a sandbox directory, or one mwp-local audit-import wrote",
    )
    parser.add_argument(
        "query", help="SQL over the views events, work_items, offers, … (docs/sql.md)"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=VALUE",
        help="bind $NAME safely (repeatable)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="table (default: values over 60 characters cut, marked …), or every value whole: "
        "csv, json (JSON lines) or markdown",
    )
    parser.add_argument("--json", action="store_true", help="JSON lines (same as --format json)")
    parser.add_argument(
        "--allow-external-access",
        action="store_true",
        help="let the query read files outside the sandbox directory (off by default)",
    )


def run(args: argparse.Namespace) -> int:
    """Run the query and print the result."""
    if args.json and args.format not in (None, "json"):
        return fail(f"--json and --format {args.format} contradict each other; give one")
    output = "json" if args.json else (args.format or "table")
    params = dict(args.param) or None
    store = DuckDBLogStore(
        args.dir / "group.duckdb", read_only=True, external_access=args.allow_external_access
    )
    note = lag_note(store, args.query)
    if note:
        print(note, file=sys.stderr)
    try:
        table = sql(store, args.query, params)
    except Exception as exc:  # a learner's SQL error: show it plainly
        return fail(str(exc), 1)
    finally:
        store.close()
    print(render(table, output), end="")
    return 0


def render(table: Any, output: str) -> str:
    """A pyarrow Table in one of ``FORMATS``."""
    names = list(table.column_names)
    rows = table.to_pylist()
    if output == "json":
        return "".join(json.dumps({n: _json(r[n]) for n in names}) + "\n" for r in rows)
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        writer.writerows([_text(r[n], null="") for n in names] for r in rows)
        return buffer.getvalue()
    if output == "markdown":
        lines = ["| " + " | ".join(names) + " |", "|" + " --- |" * len(names)]
        for r in rows:
            cells = (_text(r[n]).replace("|", "\\|").replace("\n", " ") for n in names)
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"
    return format_table(table) + "\n"


def format_table(table: Any, max_rows: int = 200) -> str:
    """A pyarrow Table as aligned text: cut values end in ``…``, NULL reads ``NULL``."""
    names = list(table.column_names)
    rows = table.slice(0, max_rows).to_pylist()
    cells = [[_text(r[n], clock=True).replace("\n", " ") for n in names] for r in rows]
    widths = [min(WIDTH, max([len(n)] + [len(c[i]) for c in cells])) for i, n in enumerate(names)]
    cut = any(len(v) > WIDTH for c in cells for v in c)

    def fit(value: str) -> str:
        return value if len(value) <= WIDTH else value[: WIDTH - 1] + CUT

    def line(values: list[str]) -> str:
        return "  ".join(fit(v).ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(names), line(["-" * w for w in widths])]
    out.extend(line(c) for c in cells)
    more = table.num_rows - len(rows)
    out.append(
        f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}"
        + (f", {more} not shown" if more > 0 else "")
        + ")"
    )
    if cut:
        out.append(
            f"({CUT} ends a value cut at {WIDTH} characters; --format csv, json or markdown "
            "prints every value whole)"
        )
    return "\n".join(out)


def _text(value: Any, *, null: str = "NULL", clock: bool = False) -> str:
    """One value as text; ``clock`` shows durations as a reader counts them (the table)."""
    if value is None:
        return null
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _clock(value) if clock else _duration(value)
    if isinstance(value, list):
        return json.dumps([_json(v) for v in value])
    return str(value)


def _json(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _duration(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def _clock(value: timedelta) -> str:
    """A duration as DuckDB's own shell prints it (``00:52:52.666672``, ``2 days 01:00:00``).

    The table is read by people: ``PT3172.666672S`` makes them divide by 60. The machine
    formats (csv, json, markdown) keep ISO 8601, which every parser reads back.
    """
    micros = value // timedelta(microseconds=1)
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    days, micros = divmod(micros, 86_400_000_000)
    seconds, rest = divmod(micros, 1_000_000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    fraction = f".{rest:06d}" if rest else ""
    prefix = f"{days} day{'s' if days != 1 else ''} " if days else ""
    return f"{sign}{prefix}{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}"


def _duration(value: timedelta) -> str:
    """An ISO 8601 duration in seconds (``PT90S``, ``PT0.5S``, ``-PT3S``)."""
    micros = value // timedelta(microseconds=1)
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    seconds, rest = divmod(micros, 1_000_000)
    fraction = f".{rest:06d}".rstrip("0") if rest else ""
    return f"{sign}PT{seconds}{fraction}S"
