"""Mission files (TOML): the Organization's Agents, the Missions, their WorkItems and scripts.

A mission file is declarative: it says *what* the Missions are (objectives, budgets, WorkItems
with contracts and dependencies, child Missions), *who* the Agents are (capabilities,
concurrency, behaviour models), what the humans will do (approve, request changes once, cancel,
replace a failed Coordinator) and which faults happen when (a Worker pauses or crashes, a
Coordinator stops renewing its lease). The agents decide *how*; the log records what happened.
See ``sample_missions/*.toml`` for annotated examples.

Checks made here give a mission author a precise message instead of a stuck run, each naming
its place and, where one is close, the fix: unknown keys and tables (``mission_keys`` holds
every key), unknown dependencies, dependency cycles (§10.4), unknown Agents, a capability no
Agent but the Coordinator offers, a Mission without WorkItems, child budgets larger than their
parent WorkItem's (§14). A WorkItem table with ``count = n`` stands for ``n`` WorkItems ``id-1`` …
``id-n``; in its text fields ``{n}`` is the index, and a dependency ``"name-*"`` means every
WorkItem of family ``name``. It must not decide protocol questions.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import tomllib
from collections.abc import Iterable
from dataclasses import asdict, replace
from enum import Enum
from pathlib import Path
from typing import Any

from ..agents.dag import find_cycle
from ..agents.specs import (
    DEFAULT_WORK_BUDGET,
    AgentSpec,
    Behaviour,
    FaultSpec,
    MissionFile,
    MissionSpec,
    WorkSpec,
)
from ..delivery.config import DeliveryConfigError, parse_delivery
from ..protocol.documents.common import MEDIA_TYPE
from ..protocol.documents.ecma import Regex
from ..protocol.errors import ProtocolError
from ..protocol.ids import is_protocol_id
from ..protocol.timestamps import parse_timestamp
from .mission_keys import BUDGET_DIMENSIONS, suggestion, unknown_keys

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
#: The capability a WorkItem promoted to a child Mission requires when it names none.
COORDINATION_CAPABILITY = ("mwp.coordination", "1.0.0")
APPROVAL_SCRIPTS = ("approve", "request_changes_once", "cancel")
_CHOICES = {
    "urgency": ("routine", "normal", "high", "critical"),
    "risk": ("none", "reversible", "external", "high_risk", "destructive"),
    "approval": ("not_required", "policy_required", "human_required"),
}
#: The Work Contract's media-type rule (work-contract.schema.json ``mediaType``).
_MEDIA_TYPE = MEDIA_TYPE.pattern or Regex(".")
FAULT_KINDS = ("pause", "crash")
CHILD_FAILURE_POLICIES = ("block", "fail")


class MissionFileError(ValueError):
    """A mission file that cannot be understood, with the place and the reason."""


def _strict(raw: Any, path: str, where: str) -> dict[str, Any]:
    """``raw`` as a table of ``path``, refusing any key that table does not have."""
    if not isinstance(raw, dict):
        raise MissionFileError(f"{where}: must be a table, not {type(raw).__name__}")
    problems = unknown_keys(raw, path)
    if problems:
        raise MissionFileError(f"{where}: " + "; ".join(problems))
    return raw


def _tables(raw: dict[str, Any], key: str, where: str) -> list[Any]:
    """The array of tables ``raw[key]`` (``[[key]]``), or none."""
    value = raw.get(key, [])
    if isinstance(value, dict):
        raise MissionFileError(
            f"{where}: '{key}' must be an array of tables: write [[{key}]], not [{key}]"
        )
    if not isinstance(value, list):
        raise MissionFileError(f"{where}: '{key}' must be an array of tables")
    return value


def duration_seconds(value: Any, where: str) -> int:
    """``90``, ``"45s"``, ``"30m"``, ``"2h"``, ``"1d2h"`` → seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = _DURATION.fullmatch(str(value)) if isinstance(value, str) and value else None
    if m is None or not any(m.groups()):
        raise MissionFileError(f"{where}: {value!r} is not a duration like 45s, 30m, 2h or 1d")
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def capability(text: str, where: str) -> tuple[str, str]:
    """``"id@1.2.0"`` → ``("id", "1.2.0")``."""
    if "@" not in text:
        raise MissionFileError(f"{where}: capability {text!r} needs a version, like id@1.0.0")
    cap, version = text.split("@", 1)
    return cap, version


def _get(table: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in table:
        raise MissionFileError(f"{where}: '{key}' is required")
    value = table[key]
    if not isinstance(value, kind):
        raise MissionFileError(f"{where}: '{key}' has the wrong type ({type(value).__name__})")
    return value


def _budget(raw: Any, default: dict[str, float], where: str) -> dict[str, float]:
    table = default if raw is None else raw
    if not isinstance(table, dict):
        raise MissionFileError(f"{where}: 'budget' must be a table")
    unknown = sorted(set(table) - set(BUDGET_DIMENSIONS))
    if unknown:
        raise MissionFileError(
            f"{where}: unknown budget dimensions {unknown}"
            + suggestion(unknown[0], BUDGET_DIMENSIONS)
            + f"; the six of §12 are {', '.join(BUDGET_DIMENSIONS)}"
        )
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise MissionFileError(f"{where}: budget '{key}' must be a non-negative number")
    return {k: float(v) for k, v in table.items()}


def _expand(raw: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A WorkItem table, or the ``count`` WorkItems a family table stands for."""
    count = raw.get("count")
    if count is None:
        return [raw]
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise MissionFileError(f"{where}: 'count' must be a positive integer")
    out = []
    for n in range(1, count + 1):

        def fill(value: Any, n: int = n) -> Any:
            if isinstance(value, str):
                return value.replace("{n}", str(n))
            if isinstance(value, list):
                return [fill(v) for v in value]
            return value

        item = {k: fill(v) for k, v in raw.items() if k != "count"}
        item["id"] = f"{raw['id']}-{n}"
        out.append(item)
    return out


def _resolve(names: Iterable[str], ids: list[str], where: str) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        if name.endswith("-*"):
            family = [i for i in ids if i.startswith(name[:-1]) and i[len(name) - 1 :].isdigit()]
            if not family:
                raise MissionFileError(f"{where}: no WorkItems match '{name}'")
            out += family
        elif name not in ids:
            raise MissionFileError(
                f"{where}: unknown WorkItem '{name}'{suggestion(name, ids)}; this Mission's "
                f"WorkItems are {', '.join(ids)}"
            )
        else:
            out.append(name)
    return tuple(dict.fromkeys(out))


def _names(raw: dict[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MissionFileError(f"{where}: '{key}' must be a list of WorkItem ids")
    return value


def _work(raw: dict[str, Any], where: str, agents: set[str], ids: list[str]) -> WorkSpec:
    wid = _get(raw, "id", where)
    w = f"{where} work '{wid}'"
    _strict(raw, "missions.work", w)
    child_raw = raw.get("child")
    cap_text = raw.get("capability")
    if cap_text is None and child_raw is None:
        raise MissionFileError(f"{w}: 'capability' is required")
    for key, allowed in _CHOICES.items():
        if key in raw and raw[key] not in allowed:
            raise MissionFileError(
                f"{w}: {key} must be one of {', '.join(allowed)}"
                + suggestion(str(raw[key]), allowed)
            )
    media_type = raw.get("media_type", "text/markdown")
    if not isinstance(media_type, str) or not _MEDIA_TYPE.search(media_type):
        raise MissionFileError(
            f"{w}: media_type {media_type!r} is not a media type; write one such as "
            "'application/json' or 'text/markdown' (work-contract.schema.json mediaType)"
        )
    reviewer = raw.get("reviewed_by")
    if reviewer is not None and reviewer not in agents:
        raise MissionFileError(
            f"{w}: reviewer '{reviewer}' is not an Agent{suggestion(reviewer, agents)}"
        )
    return WorkSpec(
        id=wid,
        goal=_get(raw, "goal", w),
        capability=capability(cap_text, w) if cap_text else COORDINATION_CAPABILITY,
        depends_on=_resolve(_names(raw, "depends_on", w), ids, w),
        discovered_after=_resolve(_names(raw, "discovered_after", w), ids, w),
        duration_s=duration_seconds(raw.get("duration", "10m"), w),
        urgency=raw.get("urgency", "normal"),
        budget=_budget(raw.get("budget"), dict(DEFAULT_WORK_BUDGET), w),
        risk=raw.get("risk", "none"),
        approval=raw.get("approval", "not_required"),
        checkpoints=int(raw.get("checkpoints", 1)),
        max_attempts=int(raw.get("max_attempts", 2)),
        deadline_s=duration_seconds(raw["deadline"], w) if "deadline" in raw else None,
        reviewed_by=reviewer,
        ambiguous=raw.get("ambiguous"),
        clarification=raw.get("clarification"),
        media_type=media_type,
    )


def _mission(
    m: dict[str, Any],
    where: str,
    agents: set[str],
    *,
    owner: str | None = None,
    parent: tuple[str, str] | None = None,
    out: list[MissionSpec],
) -> MissionSpec:
    """Build one Mission (and, depth first, its child Missions, appended to ``out``)."""
    _strict(m, "missions" if parent is None else "missions.work.child", where)
    mid = _get(m, "id", where)
    works_raw = _tables(m, "work", f"mission '{mid}'")
    if not works_raw:
        header = "[[missions.work]]" if parent is None else "[[missions.work.child.work]]"
        raise MissionFileError(
            f"mission '{mid}': it has no WorkItems; add at least one {header} table "
            "(a Mission with nothing to do would never finish)"
        )
    raw_works = []
    for i, w in enumerate(works_raw):
        if not isinstance(w, dict):
            raise MissionFileError(f"mission '{mid}' work {i}: must be a table")
        raw_works += _expand(w, f"mission '{mid}' work {i}")
    ids = [_get(w, "id", f"mission '{mid}'") for w in raw_works]
    duplicate = sorted({i for i in ids if ids.count(i) > 1})
    if duplicate:
        raise MissionFileError(f"mission '{mid}': WorkItem ids {duplicate} appear twice")
    works = [_work(w, f"mission '{mid}'", agents, ids) for w in raw_works]
    cycle = find_cycle({w.id: (*w.depends_on, *w.discovered_after) for w in works})
    if cycle:
        raise MissionFileError(
            f"mission '{mid}': dependency cycle {' → '.join(cycle)}; a Mission's WorkItems "
            "must form a directed acyclic graph (§10.4)"
        )
    coordinator = _get(m, "coordinator", where)
    if coordinator not in agents:
        raise MissionFileError(
            f"{where}: coordinator '{coordinator}' is not an Agent{suggestion(coordinator, agents)}"
        )
    standby = m.get("standby_coordinator")
    if standby is not None and standby not in agents:
        raise MissionFileError(
            f"{where}: standby_coordinator '{standby}' is not an Agent"
            + suggestion(standby, agents)
        )
    approval = m.get("approval", "approve")
    if approval not in APPROVAL_SCRIPTS:
        raise MissionFileError(
            f"{where}: approval must be one of {', '.join(APPROVAL_SCRIPTS)}"
            + suggestion(str(approval), APPROVAL_SCRIPTS)
        )
    failure_policy = m.get("child_failure_policy", "block")
    if failure_policy not in CHILD_FAILURE_POLICIES:
        raise MissionFileError(
            f"{where}: child_failure_policy must be one of {', '.join(CHILD_FAILURE_POLICIES)}"
        )
    opt = {
        key: duration_seconds(m[key], where) if key in m else None
        for key in ("coordinator_fails_after", "coordinator_returns_after", "cancel_after")
    }
    spec = MissionSpec(
        id=mid,
        objective=_get(m, "objective", where),
        owner=owner or m.get("owner", "mission-owner"),
        coordinator=coordinator,
        deadline_s=duration_seconds(m.get("deadline", "7d"), where),
        budget=_budget(m.get("budget"), {"financial": 1000}, where),
        work=(),
        approval=approval,
        starts_after_s=duration_seconds(m.get("starts_after", 0), where),
        parent=parent,
        child_failure_policy=failure_policy,
        coordinator_fails_after_s=opt["coordinator_fails_after"],
        coordinator_returns_after_s=opt["coordinator_returns_after"],
        standby_coordinator=standby,
        cancel_after_s=opt["cancel_after"],
    )
    position = len(out)
    out.append(spec)  # parents first; the children follow
    final_works = []
    for raw, work in zip(raw_works, works, strict=True):
        if "child" in raw:
            child_raw = _get(raw, "child", f"mission '{mid}' work '{work.id}'", dict)
            child = _mission(
                child_raw,
                f"mission '{mid}' work '{work.id}' child",
                agents,
                owner=coordinator,
                parent=(mid, work.id),
                out=out,
            )
            for dim, amount in child.budget.items():
                if amount > work.budget.get(dim, float("inf")):
                    raise MissionFileError(
                        f"child Mission '{child.id}': its {dim} budget {amount:g} exceeds the "
                        f"budget of its parent WorkItem '{work.id}' ({work.budget[dim]:g}); a "
                        "child's budget is a subset of its parent's (§14)"
                    )
            work = replace(work, child=child)
        final_works.append(work)
    _check_allocations(spec, final_works)
    full = replace(spec, work=tuple(final_works))
    out[position] = full
    return full


def _check_allocations(spec: MissionSpec, works: list[WorkSpec]) -> None:
    """Refuse a Mission whose WorkItems cannot all be authorized within its budget.

    Each WorkItem's budget is allocated from its Mission's when it is authorized (§4.11, §12), so
    if they ask for more in all than the Mission has, the Coordinator's ``work.authorize`` of the
    last ones is refused with BUDGET_EXCEEDED and the Mission can never finish: say so now.
    """
    for dim, limit in spec.budget.items():
        asked = [(w.id, w.budget[dim]) for w in works if dim in w.budget]
        total = sum(amount for _, amount in asked)
        if total > limit:
            shares = ", ".join(f"{wid} {amount:g}" for wid, amount in asked)
            raise MissionFileError(
                f"mission '{spec.id}': its WorkItems ask for {total:g} {dim} in all ({shares}), "
                f"but the Mission's budget allows {limit:g}; each WorkItem's budget is allocated "
                "from its Mission's (§4.11, §12), so the last ones could never be authorized. "
                f"Raise the Mission's budget.{dim} to at least {total:g}, or give the WorkItems "
                f"smaller budgets (a WorkItem without a budget table gets financial 10)"
            )


def load(path: Path | str) -> MissionFile:
    """Read and check a mission file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MissionFileError(f"{path}: cannot read the mission file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise MissionFileError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MissionFileError(f"{path}: not valid TOML: {exc}") from None
    try:
        return parse(raw, source=str(path))
    except MissionFileError as exc:
        raise MissionFileError(f"{path}: {exc}") from None


def _agent(a: Any, where: str) -> AgentSpec:
    a = _strict(a, "agents", where)
    name = _get(a, "name", where)
    where = f"agents[{where[7:-1]}] '{name}'"
    caps = a.get("capabilities", [])
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise MissionFileError(f"{where}: 'capabilities' must be a list like [\"id@1.0.0\"]")
    behaviour = _strict(a.get("behaviour", {}), "agents.behaviour", f"{where} behaviour")
    concurrency = a.get("max_concurrency", 1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 0:
        raise MissionFileError(f"{where}: 'max_concurrency' must be a non-negative integer")
    try:
        return AgentSpec(
            name=name,
            capabilities=tuple(capability(c, where) for c in caps),
            max_concurrency=concurrency,
            behaviour=Behaviour(**{k: float(v) for k, v in behaviour.items()}),
        )
    except (TypeError, ValueError) as exc:
        if isinstance(exc, MissionFileError):
            raise
        raise MissionFileError(f"{where} behaviour: {exc}") from None


def _version(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(p) for p in text.split("-", 1)[0].split("+", 1)[0].split("."))
    except ValueError:
        return None


def _offers(have: str, need: str) -> bool:
    """Whether an Agent declaring version ``have`` matches a requirement of ``need`` (the same
    major version, no lower minor or patch: what the Group Authority checks, §6.1)."""
    mine, wanted = _version(have), _version(need)
    return mine is not None and wanted is not None and mine[0] == wanted[0] and mine >= wanted


def _check_capabilities(missions: list[MissionSpec], agents: list[AgentSpec]) -> None:
    """Every WorkItem's capability is declared, at a matching version, by some Agent. (Work
    that only its own Coordinator could do is allowed here, for a test that offers it by hand;
    the Coordinator never offers work to itself, so a run of it stops for lack of progress and
    says so.)"""
    declared = sorted({c for a in agents for c, _ in a.capabilities})
    for spec in missions:
        for work in spec.work:
            if work.child is not None:
                continue  # promoted to a child Mission, never offered
            cap, version = work.capability
            if any(c == cap and _offers(v, version) for a in agents for c, v in a.capabilities):
                continue
            where = f"mission '{spec.id}' work '{work.id}'"
            near = [
                f"{a.name} offers {c}@{v}" for a in agents for c, v in a.capabilities if c == cap
            ]
            close = difflib.get_close_matches(cap, declared, n=1, cutoff=0.6)
            if near:
                hint = (
                    f" ({'; '.join(near)}: an Agent must declare the same major version and no "
                    "lower minor or patch)"
                )
            elif close:
                offering = sorted(a.name for a in agents if close[0] in dict(a.capabilities))
                hint = f" (did you mean {close[0]}, which {', '.join(offering)} offers?)"
            else:
                hint = ""
            raise MissionFileError(
                f"{where}: no Agent offers capability {cap}@{version}{hint}, so no Worker could "
                "ever take this WorkItem; add the capability to an Agent or fix the WorkItem's"
            )


def content_hash(spec: MissionFile) -> str:
    """``sha256:<hex>`` over the checked specification (every value as the checker resolved
    it, defaults included; keys sorted), without its name and source: the same Missions hash
    the same however a file spaces or orders them, whether it spells out a default, and whether
    they were written as TOML or in Python (issue 22: the same seed and Missions give the same
    Organization ID, so the same bytes)."""
    normal = asdict(replace(spec, name="", source="", content_hash=""))
    text = json.dumps(
        normal, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_plain
    )
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """A JSON value for what ``asdict`` leaves (sets, enums): never a repr with an address."""
    if isinstance(value, set | frozenset):
        return sorted(_plain(v) if not isinstance(v, str) else v for v in value)
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"content_hash: cannot hash a {type(value).__name__} ({value!r})")


def parse(raw: dict[str, Any], *, name: str = "mission", source: str = "") -> MissionFile:
    """Check a parsed mission file and build its specification."""
    _strict(raw, "", "mission file")
    sandbox = _strict(raw.get("sandbox", {}), "sandbox", "[sandbox]")
    try:
        start = parse_timestamp(sandbox.get("start", "2026-07-15T09:00:00Z")).epoch_micros
    except (ProtocolError, TypeError):
        raise MissionFileError(
            f"[sandbox]: start {sandbox.get('start')!r} is not a timestamp like "
            "2026-07-15T09:00:00Z"
        ) from None
    seed = sandbox.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise MissionFileError("[sandbox]: seed must be an integer")
    agents = [
        _agent(a, f"agents[{i}]") for i, a in enumerate(_tables(raw, "agents", "mission file"))
    ]
    listed = [a.name for a in agents]
    twice = sorted({n for n in listed if listed.count(n) > 1})
    if twice:
        raise MissionFileError(f"Agent names {twice} appear twice")
    names = set(listed)
    missions: list[MissionSpec] = []
    for i, m in enumerate(_tables(raw, "missions", "mission file")):
        _mission(m, f"missions[{i}]", names, out=missions)
    if not missions:
        raise MissionFileError("a mission file needs at least one [[missions]] table")
    ids = [m.id for m in missions]
    duplicate = sorted({i for i in ids if ids.count(i) > 1})
    if duplicate:
        raise MissionFileError(f"Mission ids {duplicate} appear twice")
    _check_capabilities(missions, agents)
    faults = []
    for i, f in enumerate(_tables(raw, "faults", "mission file")):
        where = f"faults[{i}]"
        _strict(f, "faults", where)
        agent, kind = _get(f, "agent", where), _get(f, "kind", where)
        if agent not in names:
            raise MissionFileError(f"{where}: '{agent}' is not an Agent{suggestion(agent, names)}")
        if kind not in FAULT_KINDS:
            raise MissionFileError(
                f"{where}: kind must be one of {', '.join(FAULT_KINDS)}"
                + suggestion(kind, FAULT_KINDS)
            )
        if kind == "pause" and "for" not in f:
            raise MissionFileError(f"{where}: a pause needs 'for' (how long)")
        faults.append(
            FaultSpec(
                agent=agent,
                kind=kind,
                at_s=duration_seconds(_get(f, "at", where, (str, int)), where),
                for_s=duration_seconds(f["for"], where) if "for" in f else None,
            )
        )
    delivery = None
    if "delivery" in raw:
        table = _strict(raw["delivery"], "delivery", "[delivery]")
        for key in ("disconnects", "outages"):
            for i, w in enumerate(_tables(table, key, "[delivery]")):
                _strict(w, "delivery.windows", f"delivery.{key}[{i}]")
        try:
            delivery = parse_delivery(
                raw["delivery"], start_us=start, agents=names, seconds=duration_seconds
            )
        except DeliveryConfigError as exc:
            raise MissionFileError(str(exc)) from None
    organization = sandbox.get("organization")
    if organization is not None and not is_protocol_id(organization):
        raise MissionFileError(
            f"[sandbox] organization: {organization!r} is not an identifier; an Organization ID "
            "is an absolute URI such as urn:example:organization:acme (§2)"
        )
    spec = MissionFile(
        name=raw.get("name", name),
        organization=organization,
        delivery=delivery,
        seed=seed,
        start_us=start,
        humans=tuple(sorted({m.owner for m in missions if m.parent is None})),
        agents=tuple(agents),
        missions=tuple(missions),
        faults=tuple(faults),
        source=source,
    )
    return replace(spec, content_hash=content_hash(spec))
