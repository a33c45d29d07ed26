"""A state snapshot of the Group Authority beside its log: open from it plus the log's tail.

Opening a ``GroupLog`` folds the whole log through ``evolve``; a snapshot lets it fold only the
Events after a known position instead. The snapshot is a cache, never a truth: it lives in its
own file beside the log (``snapshot_path``: ``group.duckdb`` → ``group.duckdb.state-snapshot``),
outside what a run means, and any doubt about it means the plain full replay.

Format (data only, never pickle or marshal: a tampered file must not be able to run code): one
JSON header line, then the body, orjson of plain lists, dicts and scalars: per state table its
``[key, value]`` pairs in the table's order, a record as the dict of its fields; the records are
rebuilt from their field types on load (tuples and enums back from lists and texts) and the
Registry from its fixture form, which re-validates every binding. The header binds the body to

* the log: the position of the last Event folded in, the chain value at that position, and how
  many receipts it holds (receipts are append-only with their own positions);
* the code: ``FORMAT_VERSION``, the package version and a digest of the state's record
  definitions (``code_version``), so another version never reads it;
* itself: the BLAKE3 digest of the body, checked before the body is decoded.

``load`` returns the state from snapshot plus tail, or None with the reason the plain replay is
needed (no file, unreadable, damaged, another version, a log shorter than the snapshot or whose
chain differs there, other state tables); ``GroupLog.snapshot_reason`` keeps it for the caller.

When it is written: on ``GroupLog.close`` once the log holds at least ``EVERY`` Events more
than the snapshot does (or than an empty log, when there is none). A close is the one moment the
state is known to match a committed, flushed head, and the threshold keeps small logs (whose
replay is quick anyway) and short sessions from paying for an encode of the whole state: a
reopened log folds at most ``EVERY`` Events more than it would from a fresh snapshot, or the
Events written since a crash. The file is replaced atomically (written aside, then renamed).

``verify-log`` and import never read it: they judge the log itself (the plain replay).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import itertools
import os
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
from blake3 import blake3

from ..authority.evolve import evolve
from ..authority.organization import Organization
from ..authority.records import ReceiptRecord
from ..authority.state import TABLES, AuthorityState
from ..protocol.jsontext import parse_strict
from ..protocol.registry import Registry
from ..protocol.tables import PROTOCOL_TABLES, StateTables
from .base import LogStore
from .duckdb_log import DuckDBLogStore

__all__ = [
    "EVERY",
    "FORMAT_VERSION",
    "Loaded",
    "code_version",
    "decode_state",
    "due",
    "encode_state",
    "load",
    "snapshot_path",
    "write",
    "write_file",
]

#: The layout of the file; a change of it makes every older snapshot unreadable (replay).
FORMAT_VERSION: Final = 1
#: See the module docstring: how many Events a log must hold beyond its snapshot before a
#: close writes a new one.
EVERY: Final = 1_000
SUFFIX: Final = ".state-snapshot"
_MAGIC: Final = "mwp-local state snapshot"


def _tables() -> tuple[dict[str, type | None], frozenset[str], frozenset[str]]:
    """From ``AuthorityState``'s annotations: each table's record type (None: plain JSON
    values, kept as they are), the tables keyed by a tuple and those whose values are tuples
    (JSON has lists only)."""
    hints = typing.get_type_hints(AuthorityState)
    records: dict[str, type | None] = {}
    tuple_keys, tuple_values = set(), set()
    for table in TABLES:
        key, value = typing.get_args(hints[table])
        records[table] = (
            value if isinstance(value, type) and dataclasses.is_dataclass(value) else None
        )
        if typing.get_origin(key) is tuple:
            tuple_keys.add(table)
        if typing.get_origin(value) is tuple:
            tuple_values.add(table)
    return records, frozenset(tuple_keys), frozenset(tuple_values)


_RECORDS, _TUPLE_KEYS, _TUPLE_VALUES = _tables()
#: Long text fields kept out of the JSON (see ``encode_state``).
_TEXTS: Final[dict[str, tuple[str, ...]]] = {"receipts": ("command_document", "receipt_json")}


def _definitions() -> str:
    """The state's shape as text: its tables and each record's fields and their types."""
    lines = [" ".join(TABLES)]
    for table, cls in _RECORDS.items():
        if cls is not None:
            hints = typing.get_type_hints(cls)
            fields = ", ".join(f"{f.name}: {hints[f.name]}" for f in dataclasses.fields(cls))
            lines.append(f"{table} {cls.__qualname__}({fields})")
    return "\n".join(lines)


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mwp_local")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


_CODE_VERSION: str | None = None


def code_version() -> str:
    """What a snapshot must have been written by: the format, the package version and a
    digest of the state's record definitions."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        digest = hashlib.sha256(_definitions().encode()).hexdigest()[:16]
        _CODE_VERSION = f"{FORMAT_VERSION}/{_package_version()}/{digest}"
    return _CODE_VERSION


def snapshot_path(store: LogStore) -> Path | None:
    """Where the snapshot of ``store``'s log lives (None for a store with no file)."""
    path = getattr(store, "path", None)
    if not isinstance(path, Path) or path.is_dir():
        return None
    return path.with_name(path.name + SUFFIX)


# --------------------------------------------------------------------------- encoding


def _plain(value: Any) -> Any:
    """orjson's ``default``: the enums of the records (``StrEnum`` and ``IntEnum`` values)."""
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"a state snapshot holds data only, not {type(value).__name__}")


def encode_state(state: AuthorityState) -> bytes:
    """The body of a snapshot of ``state``: the JSON of its tables, a newline, then the long
    texts of ``_TEXTS`` fields one after the other (the JSON holds their lengths), so that
    loading them is a slice instead of unescaping JSON inside JSON."""
    tables: dict[str, list[Any]] = {}
    texts: list[str] = []
    for table, cls in _RECORDS.items():
        items = getattr(state, table).items()
        if cls is None:
            tables[table] = [[k, v] for k, v in items]
            continue
        names = [f.name for f in dataclasses.fields(cls)]
        long = _TEXTS.get(table, ())
        rows = tables[table] = []
        for key, record in items:
            fields = {n: getattr(record, n) for n in names}
            for name in long:
                texts.append(fields[name])
                fields[name] = len(fields[name])
            rows.append([key, fields])
    body = {
        "organizationId": state.organization_id,
        "registry": state.registry.to_fixture(),
        "tables": tables,
    }
    encoded = orjson.dumps(body, default=_plain, option=orjson.OPT_PASSTHROUGH_DATACLASS)
    return encoded + b"\n" + "".join(texts).encode("utf-8")


Converter = Callable[[Any], Any]


def _converter(hint: Any) -> Converter | None:
    """How to turn a JSON value back into a value of type ``hint`` (None: it already is)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [_converter(a) for a in typing.get_args(hint) if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported field type {hint}")
        conv = inner[0]
        return None if conv is None else (lambda v: None if v is None else conv(v))
    if origin is tuple:
        args = typing.get_args(hint)
        item = _converter(args[0]) if args else None
        if item is None:
            return tuple
        return lambda v: tuple(item(x) for x in v)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    return None


def _record_builder(cls: type) -> Callable[[dict[str, Any]], Any]:
    """Rebuild a record of ``cls`` from the dict of its fields (exactly its fields)."""
    hints = typing.get_type_hints(cls)
    names = frozenset(f.name for f in dataclasses.fields(cls))
    convert = [(n, c) for n in sorted(names) if (c := _converter(hints[n])) is not None]

    def build(fields: dict[str, Any]) -> Any:
        if fields.keys() != names:
            raise ValueError(f"the fields of a {cls.__name__} differ from its definition")
        for name, conv in convert:
            fields[name] = conv(fields[name])
        return cls(**fields)

    return build


_BUILDERS: dict[str, Callable[[dict[str, Any]], Any]] = {}


def decode_state(body: bytes) -> AuthorityState:
    """The state a snapshot body holds; raises (``ValueError``, ``TypeError``, ``KeyError``,
    ``RegistryInvalid``) on any body this module did not write."""
    end = body.find(b"\n")
    if end < 0:
        raise ValueError("the snapshot body has no text section")
    doc = orjson.loads(body[:end])
    texts = body[end + 1 :].decode("utf-8")
    offset = 0
    state = AuthorityState(
        registry=Registry.from_fixture(doc["registry"]), organization_id=doc["organizationId"]
    )
    if not isinstance(state.organization_id, str):
        raise ValueError("organizationId is not a string")
    tables = doc["tables"]
    if set(tables) != set(_RECORDS):
        raise ValueError("the snapshot's tables differ from the state's")
    for table, cls in _RECORDS.items():
        target: dict[Any, Any] = getattr(state, table)
        pairs = tables[table]
        keyed = tuple if table in _TUPLE_KEYS else _same
        if cls is None:
            value_of = tuple if table in _TUPLE_VALUES else _same
            for key, value in pairs:
                target[keyed(key)] = value_of(value)
            continue
        build = _BUILDERS.get(table)
        if build is None:
            build = _BUILDERS[table] = _record_builder(cls)
        long = _TEXTS.get(table, ())
        for key, fields in pairs:
            for name in long:
                size = fields[name]
                if not isinstance(size, int) or not 0 <= size <= len(texts) - offset:
                    raise ValueError(f"a {name} length runs past the text section")
                fields[name] = texts[offset : offset + size]
                offset += size
            target[keyed(key)] = build(fields)
    if offset != len(texts):
        raise ValueError("the text section holds more than the records name")
    return state


def _same(value: Any) -> Any:
    return value


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True, slots=True)
class Loaded:
    """What ``load`` found: the state from snapshot plus tail, or None and why not."""

    state: AuthorityState | None
    #: Why the snapshot was not used (None when it was).
    reason: str | None
    #: The position the snapshot was taken at, and how many Events were folded on top of it.
    position: int = 0
    tail: int = 0


def _header(position: int, chain: bytes, receipts: int, body: bytes) -> bytes:
    return orjson.dumps(
        {
            "magic": _MAGIC,
            "codeVersion": code_version(),
            "position": position,
            "chain": chain.hex(),
            "receipts": receipts,
            "bodyBytes": len(body),
            "bodyDigest": blake3(body).hexdigest(),
        }
    )


def write(store: LogStore, state: AuthorityState, tables: StateTables = PROTOCOL_TABLES) -> Path:
    """Write the snapshot of ``state``, the state of ``store``'s whole committed log; return
    its path. Raises ``ValueError`` when the store has no file, something is staged, or the
    state does not hold the log's receipts (it is not the state of that log)."""
    path = snapshot_path(store)
    if path is None:
        raise ValueError("the store has no file to keep a snapshot beside")
    if tables is not PROTOCOL_TABLES:
        raise ValueError("a snapshot is only written for the protocol's state tables")
    if getattr(store, "staged", 0):
        raise ValueError("flush the store first: the snapshot binds to its committed head")
    position, chain = store.chain_head()
    receipts = _receipt_count(store)
    if receipts != len(state.receipts):
        raise ValueError(
            f"the state holds {len(state.receipts)} receipts, the log {receipts}: not its state"
        )
    write_file(path, state, position=position, chain=chain, receipts=receipts)
    return path


def write_file(
    path: Path, state: AuthorityState, *, position: int, chain: bytes, receipts: int
) -> None:
    """Write ``state`` to ``path`` as the state after the log's first ``position`` Events
    (whose last chain value is ``chain``) and first ``receipts`` receipts, atomically."""
    body = encode_state(state)
    aside = path.with_name(path.name + ".tmp")
    with open(aside, "wb") as out:
        out.write(_header(position, chain, receipts, body) + b"\n" + body)
        out.flush()
        os.fsync(out.fileno())
    os.replace(aside, path)


def _receipt_count(store: LogStore) -> int:
    last_position = getattr(store, "last_position", None)
    if callable(last_position):
        return int(last_position("log_receipts"))
    return sum(1 for _ in store.receipts())


def due(store: LogStore) -> bool:
    """Whether a close should write a new snapshot (see the module docstring)."""
    path = snapshot_path(store)
    if path is None or getattr(store, "read_only", False):
        return False
    head = store.event_count()
    if head < EVERY:
        return False
    position = 0
    try:
        with open(path, "rb") as file:
            position = int(orjson.loads(file.readline())["position"])
    except (OSError, ValueError, KeyError, TypeError):
        position = 0
    return head - position >= EVERY


def load(org: Organization, store: LogStore, tables: StateTables = PROTOCOL_TABLES) -> Loaded:
    """The state of ``store``'s log from its snapshot plus the Events after it, or None with
    the reason the caller must replay the whole log instead."""
    path = snapshot_path(store)
    if path is None:
        return Loaded(None, "the store has no file, so no snapshot")
    if tables is not PROTOCOL_TABLES:
        return Loaded(None, "other state tables than the protocol's")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Loaded(None, "no snapshot")
    except OSError as exc:
        return Loaded(None, f"the snapshot cannot be read: {exc}")
    try:
        return _load(org, store, tables, data)
    except _Refused as refused:
        return Loaded(None, str(refused))
    except Exception as exc:  # a damaged body that still matched its digest, or a bad tail
        return Loaded(None, f"the snapshot does not decode: {type(exc).__name__}: {exc}")


class _Refused(Exception):
    """The snapshot does not belong to this log or this code."""


def _load(org: Organization, store: LogStore, tables: StateTables, data: bytes) -> Loaded:
    end = data.find(b"\n")
    try:
        header = orjson.loads(data[:end] if end >= 0 else b"")
        if not isinstance(header, dict) or header.get("magic") != _MAGIC:
            raise ValueError("no snapshot header")
        version = header["codeVersion"]
        position, chain_hex, receipts = header["position"], header["chain"], header["receipts"]
        size, digest = header["bodyBytes"], header["bodyDigest"]
    except (orjson.JSONDecodeError, ValueError, KeyError) as exc:
        raise _Refused(f"the snapshot's header is damaged ({exc})") from None
    if version != code_version():
        raise _Refused(f"the snapshot was written by another version ({version})")
    if not (isinstance(position, int) and isinstance(receipts, int) and position >= 1):
        raise _Refused("the snapshot's header is damaged (position)")
    head = store.event_count()
    if position > head:
        raise _Refused(f"the snapshot is at position {position}, beyond the log's head {head}")
    body = data[end + 1 :]
    if len(body) != size or blake3(body).hexdigest() != digest:
        raise _Refused("the snapshot is damaged (its body does not match its digest)")
    entries = _entries_from(store, position)
    first = next(entries, None)
    if first is None or first.position != position or bytes(first.chain).hex() != chain_hex:
        raise _Refused(f"the snapshot is of another log (its chain differs at {position})")
    if receipts > _receipt_count(store):
        raise _Refused("the snapshot holds more receipts than the log")
    state = decode_state(body)
    if state.organization_id != org.organization_id:
        raise _Refused("the snapshot is of another Organization")
    tail = 0
    for entry in entries:
        evolve(state, parse_strict(entry.event.document), tables)
        tail += 1
    for receipt in _receipts_after(store, receipts):
        state.receipts[(receipt.actor_id, receipt.action_id)] = receipt
    state.take_touched()
    return Loaded(state, None, position=position, tail=tail)


def _entries_from(store: LogStore, position: int) -> Iterator[Any]:
    return iter(store.entries(after_position=position - 1))


def _receipts_after(store: LogStore, position: int) -> Iterator[ReceiptRecord]:
    """The receipts after the ``position``-th (a DuckDB store reads only those)."""
    if isinstance(store, DuckDBLogStore):
        return store.receipts(after_position=position)
    return itertools.islice(store.receipts(), position, None)
