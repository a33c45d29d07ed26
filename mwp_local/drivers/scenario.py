"""Missions written in Python: ``Scenario``, ``Mission``, ``WorkItem``, ``ChildMission``,
``Agent``, ``Fault`` (and ``Behaviour``), one class per table of a mission file with one field
per key (``mission_keys`` holds the table; a test keeps the two equal).

A ``Scenario`` is a mission file: ``to_dict`` gives the very tables a TOML file holds,
``to_toml`` writes them, ``from_toml``/``from_dict``/``load`` read them back, and ``check``
runs the mission-file checker on them (``mission_file.parse``), so a Scenario and its TOML are
the same Missions by construction and report the same mistakes, with the same places. A key
these classes do not have is refused as it is written, with the closest key they do have.

Plain values: building one reads no file and starts nothing.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ..agents.specs import Behaviour, MissionFile
from .mission_file import MissionFileError, parse
from .mission_keys import suggestion, table

T = TypeVar("T")

#: Python field name → mission-file key, where a key is a Python keyword.
_KEY_OF = {"for_": "for"}
_FIELD_OF = {v: k for k, v in _KEY_OF.items()}


def _keys(path: str) -> Callable[[type[T]], type[T]]:
    """Make a dataclass refuse unknown keyword arguments with a did-you-mean, naming the
    table (``path`` in ``mission_keys``) it stands for."""

    def decorate(cls: type[T]) -> type[T]:
        init = cls.__init__
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kw: Any) -> None:
            unknown = [k for k in kw if k not in names]
            if unknown:
                what = kw.get("id") or kw.get("name") or (args[0] if args else "")
                raise MissionFileError(
                    f"{cls.__name__}({what!r}): "
                    + "; ".join(f"unknown key '{k}'{suggestion(k, names)}" for k in sorted(unknown))
                )
            init(self, *args, **kw)

        cls.__init__ = __init__  # type: ignore[method-assign]
        cls._table = path  # type: ignore[attr-defined]
        return cls

    return decorate


def _raw(value: Any) -> Any:
    """A field's value as a mission file holds it."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Behaviour):
        return {
            f.name: getattr(value, f.name)
            for f in fields(value)
            if getattr(value, f.name) != f.default
        }
    if isinstance(value, Mapping):
        return {str(k): _raw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_raw(v) for v in value]
    return value


def _table_of(obj: Any) -> dict[str, Any]:
    """The fields of ``obj`` that differ from their defaults, as mission-file keys."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:
            default = MISSING
        if default is not MISSING and value == default:
            continue
        raw = _raw(value)
        if raw == {} and f.name == "behaviour":
            continue
        out[_KEY_OF.get(f.name, f.name)] = raw
    return out


def _build(cls: type[T], raw: Any, where: str) -> T:
    """An instance of ``cls`` from the table ``raw`` (keys checked against ``cls``)."""
    if not isinstance(raw, Mapping):
        raise MissionFileError(f"{where}: must be a table, not {type(raw).__name__}")
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    kw = {}
    for key, value in raw.items():
        name = _FIELD_OF.get(key, key)
        if name not in known:
            allowed = table(cls._table).keys  # type: ignore[attr-defined]
            raise MissionFileError(f"{where}: unknown key '{key}'{suggestion(key, allowed)}")
        kw[name] = value
    try:
        return cls(**kw)
    except TypeError as exc:
        raise MissionFileError(f"{where}: {exc}") from None


@_keys("missions.work")
@dataclass(kw_only=True)
class WorkItem:
    """A WorkItem the Coordinator plans (a ``[[missions.work]]`` table).

    ``capability`` is ``"id@version"`` (some Agent must offer it; the Coordinator never
    offers work to itself); ``duration`` and ``deadline`` are durations (``90``, ``"45s"``,
    ``"2h"``, ``"1d2h"``); ``depends_on`` names WorkItems of the same Mission (``"name-*"``:
    a whole ``count`` family); ``budget`` maps §12 dimensions (``financial``, ``tool_calls``,
    ...) to limits (default: 10 financial); ``media_type`` is the deliverable's media type the
    Work Contract requires (default ``text/markdown``). The other keys:
    ``docs/mission-files.md``.
    """

    id: str
    goal: str
    capability: str | None = None
    duration: str | int = "10m"
    budget: dict[str, float] | None = None
    depends_on: list[str] = field(default_factory=list)
    discovered_after: list[str] = field(default_factory=list)
    count: int | None = None
    urgency: str = "normal"
    risk: str = "none"
    approval: str = "not_required"
    deadline: str | int | None = None
    checkpoints: int = 1
    max_attempts: int = 2
    reviewed_by: str | None = None
    ambiguous: str | None = None
    clarification: str | None = None
    child: ChildMission | None = None
    media_type: str = "text/markdown"

    def to_dict(self) -> dict[str, Any]:
        """The ``[[missions.work]]`` table."""
        return _table_of(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "work") -> WorkItem:
        """A WorkItem from its table."""
        kw = dict(raw)
        if "child" in kw:
            kw["child"] = ChildMission.from_dict(kw["child"], f"{where} child")
        return _build(cls, kw, where)


def _works(raw: Any, where: str) -> list[WorkItem]:
    if not isinstance(raw, list):
        raise MissionFileError(f"{where}: 'work' must be an array of tables")
    return [WorkItem.from_dict(w, f"{where} work {i}") for i, w in enumerate(raw)]


@_keys("missions.work.child")
@dataclass(kw_only=True)
class ChildMission:
    """The child Mission (§14) a WorkItem is promoted to (its ``child`` table); owned by the
    parent's Coordinator, its budget within the parent WorkItem's."""

    id: str
    objective: str
    coordinator: str
    deadline: str | int = "7d"
    budget: dict[str, float] | None = None
    work: list[WorkItem] = field(default_factory=list)
    child_failure_policy: str = "block"

    def to_dict(self) -> dict[str, Any]:
        """The ``[missions.work.child]`` table."""
        return _table_of(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "child") -> ChildMission:
        """A child Mission from its table."""
        kw = dict(raw)
        if "work" in kw:
            kw["work"] = _works(kw["work"], where)
        return _build(cls, kw, where)


@_keys("missions")
@dataclass(kw_only=True)
class Mission:
    """A root Mission (a ``[[missions]]`` table): its objective, the human who owns it, its
    Coordinator, deadline and budget, its WorkItems, and the owner's script (``approval``:
    ``approve``, ``request_changes_once`` or ``cancel``). The other keys:
    ``docs/mission-files.md``."""

    id: str
    objective: str
    coordinator: str
    owner: str = "mission-owner"
    deadline: str | int = "7d"
    budget: dict[str, float] | None = None
    work: list[WorkItem] = field(default_factory=list)
    approval: str = "approve"
    starts_after: str | int = 0
    cancel_after: str | int | None = None
    coordinator_fails_after: str | int | None = None
    coordinator_returns_after: str | int | None = None
    standby_coordinator: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``[[missions]]`` table."""
        return _table_of(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "mission") -> Mission:
        """A Mission from its table."""
        kw = dict(raw)
        if "work" in kw:
            kw["work"] = _works(kw["work"], where)
        return _build(cls, kw, where)


@_keys("agents")
@dataclass(kw_only=True)
class Agent:
    """An Agent of the Organization (an ``[[agents]]`` table): its capabilities as
    ``"id@version"``, its execution slots, and how it performs when simulated."""

    name: str
    capabilities: list[str] = field(default_factory=list)
    max_concurrency: int = 1
    behaviour: Behaviour = field(default_factory=Behaviour)

    def __post_init__(self) -> None:
        if isinstance(self.behaviour, Mapping):
            self.behaviour = _build(Behaviour, self.behaviour, f"agent '{self.name}' behaviour")

    def to_dict(self) -> dict[str, Any]:
        """The ``[[agents]]`` table."""
        return _table_of(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "agent") -> Agent:
        """An Agent from its table."""
        return _build(cls, raw, where)


Behaviour._table = "agents.behaviour"  # type: ignore[attr-defined]


@_keys("faults")
@dataclass(kw_only=True)
class Fault:
    """A scheduled fault (a ``[[faults]]`` table): Agent ``agent`` stops acting ``at`` after
    the start, ``for_`` a while (``kind="pause"``; the file's key is ``for``) or for good
    (``"crash"``)."""

    agent: str
    kind: str
    at: str | int
    for_: str | int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``[[faults]]`` table."""
        return _table_of(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "fault") -> Fault:
        """A fault from its table."""
        return _build(cls, raw, where)


@dataclass(kw_only=True)
class Scenario:
    """A whole mission file in Python: the Agents, the Missions, the faults, the delivery bus,
    the seed and the start instant. ``Sandbox(directory, scenario)`` runs it."""

    agents: list[Agent]
    missions: list[Mission]
    faults: list[Fault] = field(default_factory=list)
    #: The ``[delivery]`` table (``docs/delivery.md``), as a dict; None: direct delivery.
    delivery: dict[str, Any] | None = None
    seed: int = 0
    start: str = "2026-07-15T09:00:00Z"
    name: str | None = None
    #: The Organization ID (None: derived from the seed, the name and the content, §2).
    organization: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The tables of the mission file, as ``tomllib`` would read them."""
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        out["sandbox"] = {"seed": self.seed, "start": self.start}
        if self.organization is not None:
            out["sandbox"]["organization"] = self.organization
        out["agents"] = [a.to_dict() for a in self.agents]
        out["missions"] = [m.to_dict() for m in self.missions]
        if self.faults:
            out["faults"] = [f.to_dict() for f in self.faults]
        if self.delivery is not None:
            out["delivery"] = _raw(self.delivery)
        return out

    def to_toml(self) -> str:
        """The mission file as TOML text (``from_toml`` reads it back)."""
        return dumps_toml(self.to_dict())

    def check(self) -> MissionFile:
        """The checked specification the Sandbox runs (``MissionFileError`` on a mistake,
        naming its place)."""
        return parse(self.to_dict(), source="python")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Scenario:
        """A Scenario from a mission file's tables (keys checked as they are read)."""
        allowed = table("").keys
        for key in raw:
            if key not in allowed:
                what = "table" if isinstance(raw[key], dict | list) else "key"
                raise MissionFileError(
                    f"mission file: unknown {what} '{key}'{suggestion(key, allowed)}"
                )
        sandbox = raw.get("sandbox", {})
        for key in sandbox:
            if key not in table("sandbox").keys:
                raise MissionFileError(
                    f"[sandbox]: unknown key '{key}'{suggestion(key, table('sandbox').keys)}"
                )

        def tables(key: str) -> list[Any]:
            value = raw.get(key, [])
            if not isinstance(value, list):
                raise MissionFileError(
                    f"mission file: '{key}' must be an array of tables: write [[{key}]]"
                )
            return value

        return cls(
            name=raw.get("name"),
            seed=sandbox.get("seed", 0),
            start=sandbox.get("start", "2026-07-15T09:00:00Z"),
            organization=sandbox.get("organization"),
            agents=[Agent.from_dict(a, f"agents[{i}]") for i, a in enumerate(tables("agents"))],
            missions=[
                Mission.from_dict(m, f"missions[{i}]") for i, m in enumerate(tables("missions"))
            ],
            faults=[Fault.from_dict(f, f"faults[{i}]") for i, f in enumerate(tables("faults"))],
            delivery=dict(raw["delivery"]) if "delivery" in raw else None,
        )

    @classmethod
    def from_toml(cls, text: str) -> Scenario:
        """A Scenario from mission-file TOML text."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise MissionFileError(f"not valid TOML: {exc}") from None
        return cls.from_dict(raw)

    @classmethod
    def load(cls, path: Path | str) -> Scenario:
        """A Scenario from a mission file (``sample_missions/*.toml``)."""
        path = Path(path)
        try:
            scenario = cls.from_toml(path.read_text(encoding="utf-8"))
        except MissionFileError as exc:
            raise MissionFileError(f"{path}: {exc}") from None
        return scenario

    def save(self, path: Path | str) -> Path:
        """Write the mission file (TOML) to ``path``."""
        path = Path(path)
        path.write_text(self.to_toml(), encoding="utf-8")
        return path


# --------------------------------------------------------------------------- TOML


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        text = repr(value)
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(text, text)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON escapes are TOML basic-string ones
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise MissionFileError(f"a {type(value).__name__} cannot be written to a mission file")


def _nested(value: Any) -> bool:
    """Whether ``value`` needs a table header (it holds tables), not an inline value."""
    if isinstance(value, Mapping):
        return any(_nested(v) for v in value.values())
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _emit(lines: list[str], data: Mapping[str, Any], path: str, depth: int) -> None:
    pad = "  " * depth
    later = []
    for key, value in data.items():
        if _nested(value) or (isinstance(value, Mapping) and not path):
            later.append((key, value))
        else:
            lines.append(f"{pad}{_key(key)} = {_value(value)}")
    for key, value in later:
        full = f"{path}.{_key(key)}" if path else _key(key)
        inner = depth if not path else depth + 1
        if isinstance(value, list):
            for item in value:
                lines.append("")
                lines.append(f"{'  ' * inner}[[{full}]]")
                _emit(lines, item, full, inner)
        else:
            lines.append("")
            lines.append(f"{'  ' * inner}[{full}]")
            _emit(lines, value, full, inner)


def dumps_toml(data: Mapping[str, Any]) -> str:
    """``data`` (strings, numbers, booleans, lists, tables, arrays of tables) as TOML text."""
    lines: list[str] = []
    _emit(lines, data, "", 0)
    return "\n".join(lines).lstrip("\n") + "\n"


__all__ = [
    "Agent",
    "Behaviour",
    "ChildMission",
    "Fault",
    "Mission",
    "Scenario",
    "WorkItem",
    "dumps_toml",
]
