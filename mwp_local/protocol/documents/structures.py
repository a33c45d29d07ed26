"""A small combinator language for the structure of protocol documents: arrays, objects and the
applicators (``allOf``, ``anyOf``, ``not``, ``if``/``then``/``else``, tagged unions).

The semantics are those described in :mod:`.shapes`. This module must not know any protocol
document, perform I/O, or import a JSON Schema library.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .problems import Path, Problem, describe, json_key, json_type
from .shapes import Shape

__all__ = [
    "FREE_OBJECT",
    "AllOf",
    "AnyOf",
    "Arr",
    "Forbids",
    "Has",
    "If",
    "MinItems",
    "Not",
    "Obj",
    "Tagged",
    "Where",
]


class Arr(Shape):
    """``type: array`` with ``items``, ``minItems``, ``maxItems`` and ``uniqueItems``."""

    __slots__ = ("items", "max_items", "min_items", "unique")

    def __init__(
        self,
        items: Shape | None = None,
        *,
        min_items: int | None = None,
        max_items: int | None = None,
        unique: bool = False,
    ) -> None:
        self.items = items
        self.min_items = min_items
        self.max_items = max_items
        self.unique = unique

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, list):
            out.append(Problem(at, f"must be an array, not {json_type(value)}", "type"))
            return
        _check_min_items(value, self.min_items, at, out)
        if self.max_items is not None and len(value) > self.max_items:
            msg = f"must contain at most {self.max_items} items (has {len(value)})"
            out.append(Problem(at, msg, "maxItems"))
        if self.items is not None:
            for index, item in enumerate(value):
                self.items.check(item, (*at, index), out)
        if self.unique:
            seen: dict[object, int] = {}
            for index, item in enumerate(value):
                key = json_key(item)
                if key in seen:
                    msg = f"must not repeat an item (item [{index}] equals item [{seen[key]}])"
                    out.append(Problem(at, msg, "uniqueItems"))
                    break
                seen[key] = index


def _check_min_items(value: list[Any], min_items: int | None, at: Path, out: list[Problem]) -> None:
    if min_items is not None and len(value) < min_items:
        noun = "item" if min_items == 1 else "items"
        msg = f"must contain at least {min_items} {noun}"
        if value:
            msg += f" (has {len(value)})"
        out.append(Problem(at, msg, "minItems"))


class MinItems(Shape):
    """A bare ``minItems`` (no ``type``): constrains arrays, ignores every other value."""

    __slots__ = ("min_items", "why")

    def __init__(self, min_items: int, *, why: str | None = None) -> None:
        self.min_items = min_items
        self.why = why

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if isinstance(value, list):
            _check_min_items(value, self.min_items, at, out)


class Obj(Shape):
    """``type: object`` with ``properties``, ``required`` and ``additionalProperties``.

    ``required`` and ``optional`` together are ``properties``; ``additional`` is ``False`` (the
    default: unknown members are refused), ``True`` (anything), or a shape every other member
    must satisfy; ``names`` is ``propertyNames``; ``rules`` are further schemas (``allOf``,
    usually conditionals) applied to the same object. Rule problems about a member already
    reported wrong, and conditionals whose condition looks at such a member, are left out: they
    would only repeat or mislead, and the object is invalid either way.
    """

    __slots__ = ("additional", "names", "props", "required", "rules")

    def __init__(
        self,
        required: Mapping[str, Shape] | None = None,
        optional: Mapping[str, Shape] | None = None,
        *,
        additional: Shape | bool = False,
        names: Shape | None = None,
        rules: Iterable[Shape] = (),
    ) -> None:
        req = dict(required or {})
        opt = dict(optional or {})
        overlap = req.keys() & opt.keys()
        if overlap:
            raise ValueError(f"members both required and optional: {sorted(overlap)}")
        self.required = tuple(req)
        self.props: dict[str, Shape] = {**req, **opt}
        self.additional = additional
        self.names = names
        self.rules = tuple(rules)

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, dict):
            out.append(Problem(at, f"must be an object, not {json_type(value)}", "type"))
            return
        before = len(out)
        for name in self.required:
            if name not in value:
                out.append(Problem((*at, name), "is required", "required"))
        if self.props or self.names is not None or self.additional is not True:
            self._check_members(value, at, out)  # (else any member is allowed as it is)
        if not self.rules:
            return
        # Once a member is reported wrong, a conditional that looks at it, or a further problem
        # inside it, would only add noise: the object is invalid already either way.
        faulty = {p.path[len(at)] for p in out[before:] if len(p.path) > len(at)}
        for rule in self.rules:
            if isinstance(rule, If) and not faulty.isdisjoint(rule.cond.inspects()):
                continue
            found = rule.problems(value, at)
            out.extend(p for p in found if len(p.path) <= len(at) or p.path[len(at)] not in faulty)

    def _check_members(self, value: dict[Any, Any], at: Path, out: list[Problem]) -> None:
        for name, member in value.items():
            where = (*at, name)
            if self.names is not None:
                for p in self.names.problems(name, where):
                    out.append(Problem(where, f"member name {p.message}", "propertyNames"))
            shape = self.props.get(name)
            if shape is not None:
                shape.check(member, where, out)
            elif self.additional is False:
                msg = "is not a member of this object (v0.1 objects refuse unknown members)"
                out.append(Problem(where, msg, "additionalProperties"))
            elif isinstance(self.additional, Shape):
                self.additional.check(member, where, out)


#: ``{"type": "object"}``: any object (free-form payloads, details, constraints).
FREE_OBJECT: Final = Obj(additional=True)


class Where(Shape):
    """``properties`` + ``required`` without ``type``: non-objects pass untouched.

    This is the form conditions (``if``) and consequences (``then``/``else``) take.
    """

    __slots__ = ("props", "required", "why")

    def __init__(
        self,
        props: Mapping[str, Shape] | None = None,
        *,
        required: Iterable[str] = (),
        why: str | None = None,
    ) -> None:
        self.props = dict(props or {})
        self.required = tuple(required)
        self.why = why

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, dict):
            return
        for name in self.required:
            if name not in value:
                msg = "is required" + (f" ({self.why})" if self.why else "")
                out.append(Problem((*at, name), msg, "required"))
        for name, shape in self.props.items():
            if name in value:
                shape.check(value[name], (*at, name), out)

    def inspects(self) -> frozenset[str]:
        return frozenset(self.props) | frozenset(self.required)


def Has(**props: Shape) -> Where:
    """The usual ``if`` condition: each named member is present and matches its shape."""
    return Where(props, required=props)


class Forbids(Shape):
    """``not: {anyOf: [{required: [a]}, {required: [b]}, ...]}``: none of these members.

    Like the JSON Schema it transcribes, a non-object fails (``required`` holds vacuously there).
    """

    __slots__ = ("names", "why")

    def __init__(self, *names: str, why: str | None = None) -> None:
        self.names = names
        self.why = why

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, dict):
            out.append(Problem(at, f"must be an object, not {json_type(value)}", "not"))
            return
        for name in self.names:
            if name in value:
                msg = "must be absent" + (f" ({self.why})" if self.why else "")
                out.append(Problem((*at, name), msg, "not"))


class AllOf(Shape):
    """``allOf``: every shape applies."""

    __slots__ = ("shapes",)

    def __init__(self, *shapes: Shape) -> None:
        self.shapes = shapes

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        for shape in self.shapes:
            shape.check(value, at, out)


class AnyOf(Shape):
    """``anyOf``: at least one shape applies; ``expect`` says what that means."""

    __slots__ = ("expect", "shapes")

    def __init__(self, *shapes: Shape, expect: str) -> None:
        self.shapes = shapes
        self.expect = expect

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not any(shape.accepts(value) for shape in self.shapes):
            out.append(Problem(at, f"must be {self.expect} (got {describe(value)})", "anyOf"))


class Not(Shape):
    """``not``: the shape must *not* apply; ``message`` says what is wrong when it does."""

    __slots__ = ("message", "shape")

    def __init__(self, shape: Shape, *, message: str) -> None:
        self.shape = shape
        self.message = message

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if self.shape.accepts(value):
            out.append(Problem(at, self.message, "not"))

    def inspects(self) -> frozenset[str]:
        return self.shape.inspects()


class Tagged(Shape):
    """A ``oneOf`` whose alternatives each require ``key`` to be a distinct string ``const``.

    Selecting the alternative by that member is then the same as trying every one, and gives a
    precise message. Each case shape must itself require ``key`` with its tag as ``const``.
    """

    __slots__ = ("cases", "key", "what")

    def __init__(self, key: str, cases: Mapping[str, Shape], *, what: str) -> None:
        self.key = key
        self.cases = dict(cases)
        self.what = what

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, dict):
            out.append(Problem(at, f"must be an object, not {json_type(value)}", "type"))
            return
        if self.key not in value:
            out.append(Problem((*at, self.key), "is required", "required"))
            return
        tag = value[self.key]
        shape = self.cases.get(tag) if isinstance(tag, str) else None
        if shape is None:
            allowed = ", ".join(describe(t) for t in self.cases)
            msg = f"must be a known {self.what}: one of {allowed} (got {describe(tag)})"
            out.append(Problem((*at, self.key), msg, "oneOf"))
            return
        shape.check(value, at, out)


class If(Shape):
    """``if``/``then``/``else``; ``then_why``/``else_why`` are added to the branch's messages."""

    __slots__ = ("cond", "else_why", "otherwise", "then", "then_why")

    def __init__(
        self,
        cond: Shape,
        *,
        then: Shape | None = None,
        otherwise: Shape | None = None,
        then_why: str | None = None,
        else_why: str | None = None,
    ) -> None:
        self.cond = cond
        self.then = then
        self.otherwise = otherwise
        self.then_why = then_why
        self.else_why = else_why

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        holds = self.cond.accepts(value)
        branch, why = (self.then, self.then_why) if holds else (self.otherwise, self.else_why)
        if branch is None:
            return
        found = branch.problems(value, at)
        if why:
            found = [Problem(p.path, f"{p.message} ({why})", p.keyword) for p in found]
        out.extend(found)
