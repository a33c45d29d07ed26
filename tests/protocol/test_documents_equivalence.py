"""Our hand-written shapes against the official schemas run by ``jsonschema`` (tests only).

A seeded mutation campaign derives a few hundred mutants from every seed (drop a member, add an
unknown or a borrowed member, change a value's type, empty or pad a string or array, break a
pattern or a timestamp, swap enum values, toggle the values conditionals look at) and our verdict
must equal the official schema's for every mutant.

The only tolerated disagreements are the ``DELIBERATE_DIFFERENCES`` of the corpus module, and
only by rule: a mutant that contains a string on which a listed difference applies is compared
with the ``strict`` oracle (the official schemas with exactly those differences applied), which
must then agree with us; every other mutant is compared with the ``stock`` oracle.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mwp_local.protocol.documents import is_valid
from mwp_local.protocol.timestamps import is_timestamp
from tests.protocol.test_documents_corpus import (
    DELIBERATE_DIFFERENCES,
    EXTRA_SEEDS,
    SCHEMA_DOCS,
    SEEDS,
    VALID_VECTORS,
    differences_in,
    stock,
    strict,
    strings_in,
)

CAMPAIGN_SEED = 20260715
#: Mutants per seed: (single mutations, double mutations).
OFFICIAL_BUDGET = (260, 60)
EXTRA_BUDGET = (90, 30)


def _canonical(doc: Any) -> str:
    # Sorted-key JSON text: unlike ``==``, it tells 1 from 1.0 and true from 1.
    return json.dumps(doc, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- mutation vocabulary


def _schema_values(keyword: str) -> list[Any]:
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == keyword:
                    found.append(value)
                if key != "properties" or not isinstance(value, dict):
                    walk(value)
                else:
                    for sub in value.values():
                        walk(sub)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for doc in SCHEMA_DOCS.values():
        walk(doc)
    return found


LENGTH_LIMITS = sorted(set(_schema_values("minLength") + _schema_values("maxLength")))
NUMBER_LIMITS = sorted(set(_schema_values("minimum") + _schema_values("maximum")))
VOCABULARY = sorted(
    {v for e in _schema_values("enum") for v in e if isinstance(v, str)}
    | {v for v in _schema_values("const") if isinstance(v, str)}
)
MEMBER_NAMES = sorted(
    {name for props in _schema_values("properties") if isinstance(props, dict) for name in props}
)
SEMVER_LIKE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
TYPE_SWAPS: list[Any] = [None, True, False, 0, 1, -1, 1.0, 0.5, "", "x", [], {}, [1], {"a": 1}]
TIMESTAMP_VARIANTS = [
    "2026-07-15T00:00:00+00:00",
    "2026-07-15T00:00:00-00:00",
    "2026-07-15t00:00:00z",
    "2026-07-15T00:00:00.123456789Z",
    "2026-07-15T02:00:00+02:00",
    "2026-02-29T00:00:00Z",
    "2024-02-29T00:00:00Z",
    "2026-07-15T23:59:60Z",
    "0000-07-15T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2026-07-15T00:00Z",
    "2026-07-15 00:00:00Z",
    "2026-07-15T24:00:00Z",
    "2026-07-15T00:00:00+24:00",
    "2026-07-15T00:00:00",
    "2026-07-15T00:00:00.Z",
    "2026-07-15T00:00:00Z\n",
    "2026-07-15T00:00:00-00:00\n",
]
URI_VARIANTS = [
    "urn:x\n",
    "urn:x ",
    " urn:x",
    "relative/reference",
    "//host/path",
    "urn:é",
    "urn:%C3%A9",
    "urn:%zz",
    "http://[::1]:8080/",
    "http://[::1/",
    "HTTP://EXAMPLE.ORG",
    "x:",
    "a:b\\c",
    "a:b#c#d",
    "a:b?c?d",
    "urn:" + "a" * 508,
    "urn:" + "a" * 509,
    "wss://agents.example/x",
    "wss:/x",
    "mailto:a@b.example",
    "sha256:" + "a" * 64,
]
SPECIAL_STRINGS = [
    "\x1c",
    "\u00a0",
    "\ufeff",
    " ",
    "\n",
    "P",
    "PT",
    "P1D",
    "PT1.5S",
    "P1DT",
    "sha256:" + "A" * 64,
    "sha256:" + "a" * 63,
    "ext.acme.x",
    "ext.acme.x.y",
    "ext.Acme.x.y",
    "1.0.0-rc.1+build.5",
    "01.0.0",
    "c2lnbmF0dXJl=",
    "a",
    "USD",
    "usd",
    "text/plain",
    "text/plain; charset=utf-8",
    "mission.created",
    "work.progressed",
    "Mission.created",
]


def _donor_values() -> dict[str, list[Any]]:
    donors: dict[str, list[Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                bucket = donors.setdefault(key, [])
                if len(bucket) < 12 and all(_canonical(value) != _canonical(b) for b in bucket):
                    bucket.append(copy.deepcopy(value))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for _, _, doc in SEEDS:
        walk(doc)
    return donors


DONORS = _donor_values()


# --------------------------------------------------------------------------- mutations


@dataclass(frozen=True)
class Mutation:
    """One edit at ``path``: drop/add a member, set a value, duplicate or delete an item."""

    op: str
    path: tuple[str | int, ...]
    key: str | int | None = None
    value: Any = None

    def __str__(self) -> str:
        where = "/".join(str(p) for p in self.path) or "(root)"
        if self.op == "set":
            return f"set {where} = {json.dumps(self.value, ensure_ascii=False)[:80]}"
        if self.op == "add":
            return f"add {where}/{self.key} = {json.dumps(self.value, ensure_ascii=False)[:80]}"
        return f"{self.op} {where}" + (f"/{self.key}" if self.key is not None else "")


def _nodes(
    doc: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    yield path, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _nodes(value, (*path, index))


def _string_variants(text: str, rng: random.Random) -> list[Any]:
    out: list[Any] = [text + "\n", " " + text, text.upper(), text + "é", text[:-1], text + text]
    targets = {n + d for n in LENGTH_LIMITS for d in (-1, 0, 1) if n + d >= 0}
    out += [text + "a" * (n - len(text)) for n in targets if n > len(text)]
    out += [text[:n] for n in targets if n < len(text)]
    if SEMVER_LIKE.fullmatch(text):
        # Pad inside the grammar (build metadata), so that only the length can fail.
        out += [f"{text}+{'a' * (n - len(text) - 1)}" for n in targets if n > len(text) + 1]
    out += rng.sample(VOCABULARY, 6) + rng.sample(SPECIAL_STRINGS, 6)
    if is_timestamp(text):
        out += TIMESTAMP_VARIANTS
    if ":" in text:
        out += rng.sample(URI_VARIANTS, 8)
    return out


def _number_variants(number: float) -> list[Any]:
    out: list[Any] = [number + 0.5, float(number), -number, number + 1, number - 1]
    for limit in NUMBER_LIMITS:
        out += [limit, limit - 1, limit + 1, float(limit), limit + 1e-6, limit - 1e-6]
    return out


def candidates(doc: Any, rng: random.Random) -> list[Mutation]:
    """Every mutation considered for ``doc`` (the campaign samples from these)."""
    found: list[Mutation] = []
    for path, node in _nodes(doc):
        if isinstance(node, dict):
            found += [Mutation("drop", path, key) for key in node]
            found.append(Mutation("add", path, "unexpectedMember", "x"))
            for name in rng.sample(MEMBER_NAMES, 4):
                value = rng.choice(DONORS.get(name, ["x"]))
                found.append(Mutation("add", path, name, value))
        if isinstance(node, list) and node:
            found += [Mutation("dup", path), Mutation("delete", path, 0)]
        if not path:
            continue
        values: list[Any] = list(TYPE_SWAPS)
        key = next((p for p in reversed(path) if isinstance(p, str)), None)
        if key is not None:
            values += DONORS.get(key, [])
        if isinstance(node, str):
            values += _string_variants(node, rng)
        elif isinstance(node, bool):
            values += [not node, "true", 1, 0]
        elif isinstance(node, int | float):
            values += _number_variants(node)
        found += [Mutation("set", path, value=v) for v in values]
    return found


def _parent(doc: Any, path: tuple[str | int, ...]) -> Any:
    node = doc
    for step in path:
        node = node[step]
    return node


def apply(doc: Any, mutation: Mutation) -> Any:
    """A mutated deep copy of ``doc``; raises ``LookupError`` if the path no longer exists."""
    out = copy.deepcopy(doc)
    try:
        if mutation.op == "set":
            if not mutation.path:
                return copy.deepcopy(mutation.value)
            holder = _parent(out, mutation.path[:-1])
            holder[mutation.path[-1]] = copy.deepcopy(mutation.value)
            return out
        node = _parent(out, mutation.path)
        if mutation.op == "drop":
            del node[mutation.key]
        elif mutation.op == "add" and isinstance(node, dict):
            node[mutation.key] = copy.deepcopy(mutation.value)
        elif mutation.op == "dup" and isinstance(node, list):
            node.append(copy.deepcopy(node[0]))
        elif mutation.op == "delete" and isinstance(node, list):
            del node[int(mutation.key or 0)]
        else:
            raise LookupError(mutation)
    except (KeyError, IndexError, TypeError) as exc:
        raise LookupError(mutation) from exc
    return out


def mutants(doc: Any, budget: tuple[int, int], rng: random.Random) -> Iterator[tuple[str, Any]]:
    """``budget[0]`` single and ``budget[1]`` double mutants of ``doc``, deterministically."""
    pool = candidates(doc, rng)
    singles, doubles = budget
    for mutation in rng.sample(pool, min(singles, len(pool))):
        yield str(mutation), apply(doc, mutation)
    made = 0
    while made < doubles:
        first, second = rng.sample(pool, 2)
        try:
            yield f"{first}; then {second}", apply(apply(doc, first), second)
        except LookupError:
            continue
        made += 1


# --------------------------------------------------------------------------- the campaign


@dataclass
class Tally:
    total: int = 0
    valid: int = 0
    excused: int = 0


def _judge(schema: str, generated: Iterator[tuple[str, Any]]) -> Tally:
    tally = Tally()
    disagreements: list[str] = []
    for description, mutant in generated:
        tally.total += 1
        ours = is_valid(schema, mutant)
        tally.valid += ours
        if differences_in(mutant):
            theirs = strict(schema).is_valid(mutant)
            tally.excused += ours != stock(schema).is_valid(mutant)
            oracle = "strict"
        else:
            theirs = stock(schema).is_valid(mutant)
            oracle = "stock"
        if ours != theirs:
            verdict = "accepts" if ours else "refuses"
            disagreements.append(f"{description}: we {verdict}, {oracle} jsonschema does not")
    assert disagreements == [], "\n".join(disagreements[:20])
    return tally


def _campaign(schema: str, label: str, doc: Any, budget: tuple[int, int]) -> Tally:
    rng = random.Random(f"{CAMPAIGN_SEED}:{schema}:{label}")
    return _judge(schema, mutants(doc, budget, rng))


# --------------------------------------------------------------------------- systematic probes


def _resolve(file: str, ref: str) -> tuple[str, Any]:
    target, _, pointer = ref.partition("#")
    name = target.removesuffix(".schema.json") if target else file
    node = SCHEMA_DOCS[name]
    for part in pointer.split("/")[1:]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return name, node


def _expand(file: str, node: Any) -> list[tuple[str, dict[str, Any]]]:
    """The subschema and every subschema that applies alongside it (refs, allOf, branches)."""
    out: list[tuple[str, dict[str, Any]]] = []
    stack = [(file, node)]
    while stack:
        where, current = stack.pop()
        if not isinstance(current, dict):
            continue
        out.append((where, current))
        if "$ref" in current:
            stack.append(_resolve(where, current["$ref"]))
        for key in ("allOf", "anyOf", "oneOf"):
            stack += [(where, sub) for sub in current.get(key, [])]
        stack += [(where, current[key]) for key in ("then", "else") if key in current]
    return out


def subschemas_at(schema: str, path: tuple[str | int, ...]) -> list[dict[str, Any]]:
    """Every official subschema that may apply to the instance location ``path``."""
    current = _expand(schema, SCHEMA_DOCS[schema])
    for step in path:
        following: list[tuple[str, Any]] = []
        for where, node in current:
            if isinstance(step, int):
                if isinstance(node.get("items"), dict):
                    following.append((where, node["items"]))
            elif step in node.get("properties", {}):
                following.append((where, node["properties"][step]))
            elif isinstance(node.get("additionalProperties"), dict):
                following.append((where, node["additionalProperties"]))
        current = [entry for where, node in following for entry in _expand(where, node)]
    return [node for _, node in current]


def _limits(nodes: list[dict[str, Any]], *keywords: str) -> list[Any]:
    found: list[Any] = []
    for node in nodes:
        found += [node[k] for k in keywords if k in node and node[k] not in found]
    return found


def systematic_mutants(schema: str, doc: Any) -> Iterator[tuple[str, Any]]:
    """Deterministic probes guided by the official schema at each location of ``doc``.

    Every member dropped, an unknown member added to every object, every ``enum``/``const``
    value that applies at a location, and values just inside and just outside every length,
    size and range limit.
    """
    for path, node in _nodes(doc):
        if isinstance(node, dict):
            for mutation in [Mutation("drop", path, key) for key in node] + [
                Mutation("add", path, "unexpectedMember", 1)
            ]:
                yield str(mutation), apply(doc, mutation)
        if not path:
            continue
        here = subschemas_at(schema, path)
        values: list[Any] = [v for e in _limits(here, "enum") for v in e]
        values += [n["const"] for n in here if "const" in n]
        if isinstance(node, str):
            for n in _limits(here, "minLength", "maxLength"):
                for target in (n - 1, n, n + 1):
                    if target < len(node):
                        values.append(node[: max(target, 0)])
                    elif target > len(node):
                        values.append(node + "a" * (target - len(node)))
                        if SEMVER_LIKE.fullmatch(node) and target > len(node) + 1:
                            values.append(f"{node}+{'a' * (target - len(node) - 1)}")
        elif isinstance(node, int | float) and not isinstance(node, bool):
            for m in _limits(here, "minimum", "maximum"):
                values += [m - 1, m, m + 1, m - 1e-6, m + 1e-6, float(m)]
        elif isinstance(node, list):
            for m in _limits(here, "minItems", "maxItems"):
                for target in (m - 1, m, m + 1):
                    if 0 <= target < len(node):
                        values.append(node[:target])
                    elif target > len(node) and node:
                        values.append(node + [node[-1]] * (target - len(node)))
        for value in values:
            mutation = Mutation("set", path, value=value)
            yield str(mutation), apply(doc, mutation)


@pytest.mark.parametrize("case", VALID_VECTORS, ids=lambda c: f"{c.schema}: {c.id}")
def test_mutants_of_official_vector_get_the_official_schemas_verdict(case: Any) -> None:
    tally = _campaign(case.schema, case.id, case.doc, OFFICIAL_BUDGET)
    assert tally.total == sum(OFFICIAL_BUDGET)
    # The campaign must reach both sides of the boundary, not only break documents.
    assert 0 < tally.valid < tally.total


@pytest.mark.parametrize("seed", EXTRA_SEEDS, ids=lambda s: f"{s[0]}: {s[1]}")
def test_mutants_of_extra_seed_get_the_official_schemas_verdict(
    seed: tuple[str, str, Any],
) -> None:
    tally = _campaign(seed[0], seed[1], seed[2], EXTRA_BUDGET)
    assert 0 < tally.valid < tally.total


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"{s[0]}: {s[1]}")
def test_systematic_probes_of_seed_get_the_official_schemas_verdict(
    seed: tuple[str, str, Any],
) -> None:
    tally = _judge(seed[0], systematic_mutants(seed[0], seed[2]))
    assert tally.total > 0


# --------------------------------------------------------------------------- the differences


def _set(doc: Any, path: tuple[str | int, ...], value: Any) -> Any:
    return apply(doc, Mutation("set", path, value=value))


COMMAND = VALID_VECTORS[0].doc
LEASE = next(c.doc for c in VALID_VECTORS if c.schema == "lease")
AGENT_CARD = next(c.doc for c in VALID_VECTORS if c.schema == "agent-card")

#: (difference name, schema, document, our verdict): the stock oracle gives the opposite.
DIFFERENCE_EXAMPLES = [
    (0, "command", _set(COMMAND, ("issuedAt",), "2026-07-15T00:00:00-00:00"), False),
    (0, "command", _set(COMMAND, ("issuedAt",), "2026-07-15T00:00:00Z\n"), False),
    (1, "agent-card", _set(AGENT_CARD, ("capabilities", 0, "inputSchema"), "https://x/\n"), False),
    (2, "command", _set(COMMAND, ("signature", "value"), "c2lnbmF0dXJl\n"), False),
    (2, "command", _set(COMMAND, ("kind",), "ext.acme.review.request\n"), False),
    (2, "lease", _set(LEASE, ("closureReason",), "\x1c"), True),
    (2, "lease", _set(LEASE, ("closureReason",), "\ufeff"), False),
]


@pytest.mark.parametrize(
    ("difference", "schema", "doc", "ours"),
    DIFFERENCE_EXAMPLES,
    ids=[
        f"{DELIBERATE_DIFFERENCES[d].name}: {json.dumps(list(strings_in(doc))[-1])[:40]}"
        for d, _, doc, _ in DIFFERENCE_EXAMPLES
    ],
)
def test_each_deliberate_difference_is_real_and_named_by_its_rule(
    difference: int, schema: str, doc: Any, ours: bool
) -> None:
    assert is_valid(schema, doc) is ours
    assert stock(schema).is_valid(doc) is not ours
    assert strict(schema).is_valid(doc) is ours
    assert DELIBERATE_DIFFERENCES[difference].name in differences_in(doc)
