"""A small combinator language for the structure of protocol documents.

Owns the building blocks (:class:`Obj`, :class:`Str`, :class:`Int`, :class:`Arr`, :class:`If`,
...) in which the area modules transcribe the 22 normative JSON Schemas by hand, and the
:class:`Problem` each block reports. The semantics are those of JSON Schema Draft 2020-12 for the
keywords the schemas use:

* ``integer`` accepts ``1.0``; booleans are never numbers; ``const``, ``enum`` and
  ``uniqueItems`` use JSON equality (``1 == 1.0``, ``true != 1``);
* lengths count Unicode code points;
* ``pattern`` is an unanchored ECMA-262 regular expression *search*, translated faithfully to
  Python ``re`` by :class:`.ecma.Regex`;
* applicators that inspect members (:class:`Where`, used inside ``if``/``then``) ignore values
  that are not objects, exactly like ``properties``/``required`` do;
* ``format`` is an assertion (see :mod:`.formats` for ``uri`` and ``date-time``).

One deliberate refusal goes beyond JSON Schema: a non-finite number (``NaN``, ``Infinity``, or
a ``jsontext.NonFiniteNumber``) is never accepted where a number is expected, since JSON cannot
carry it (section 2).

This module must not know any protocol document, perform I/O, or import a JSON Schema library.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from enum import Enum as _PyEnum
from typing import Any, Final

from .ecma import Regex
from .formats import Format
from .problems import Path, Problem, describe, is_finite_number, json_key, json_type

__all__ = [
    "ANY",
    "FREE_OBJECT",
    "AllOf",
    "AnyOf",
    "AnyValue",
    "Arr",
    "Bool",
    "Const",
    "Enum",
    "Forbids",
    "Has",
    "If",
    "Int",
    "MinItems",
    "Minimum",
    "Not",
    "Num",
    "Obj",
    "Path",
    "Problem",
    "Shape",
    "Str",
    "Tagged",
    "Where",
]

# --------------------------------------------------------------------------- shapes


class Shape(ABC):
    """A JSON Schema (sub)schema: checks a JSON value and reports every problem it finds."""

    __slots__ = ()

    @abstractmethod
    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        """Append to ``out`` one :class:`Problem` per violation found in ``value`` at ``at``."""

    def problems(self, value: object, at: Path = ()) -> list[Problem]:
        """Every problem in ``value``; empty when it conforms."""
        out: list[Problem] = []
        self.check(value, at, out)
        return out

    def accepts(self, value: object) -> bool:
        """Whether ``value`` conforms."""
        out: list[Problem] = []
        self.check(value, (), out)
        return not out

    def inspects(self) -> frozenset[str]:
        """Names of the object members this shape looks at when used as a condition."""
        return frozenset()


class AnyValue(Shape):
    """The empty schema ``{}``: every JSON value."""

    __slots__ = ()

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        return None


ANY: Final = AnyValue()


class Str(Shape):
    """``type: string`` with optional ``minLength``/``maxLength``/``pattern``/``format``.

    ``forbid`` is ``not: {pattern: ...}``: the string must contain no match of it. ``hint``
    names what the pattern means, for messages ("a content hash sha256:<64 hex digits>").
    """

    __slots__ = ("fmt", "forbid", "hint", "max_len", "min_len", "pattern")

    def __init__(
        self,
        *,
        pattern: str | None = None,
        min_len: int | None = None,
        max_len: int | None = None,
        fmt: Format | None = None,
        forbid: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.pattern = Regex(pattern) if pattern is not None else None
        self.min_len = min_len
        self.max_len = max_len
        self.fmt = fmt
        self.forbid = Regex(forbid) if forbid is not None else None
        self.hint = hint

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, str):
            out.append(Problem(at, f"must be a string, not {json_type(value)}", "type"))
            return
        before = len(out)
        length = len(value)
        if self.min_len is not None and length < self.min_len:
            msg = (
                "must not be empty"
                if self.min_len == 1
                else f"must be at least {self.min_len} characters long (has {length})"
            )
            out.append(Problem(at, msg, "minLength"))
        if self.max_len is not None and length > self.max_len:
            msg = f"must be at most {self.max_len} characters long (has {length})"
            out.append(Problem(at, msg, "maxLength"))
        if self.pattern is not None and self.pattern.search(value) is None:
            what = self.hint or f"a string matching {self.pattern.source}"
            out.append(Problem(at, f"must be {what} (got {describe(value)})", "pattern"))
        if self.forbid is not None:
            found = self.forbid.search(value)
            if found is not None:
                msg = f"must not contain {found.group()!r} (only URI characters are allowed)"
                out.append(Problem(at, msg, "not"))
        if self.fmt is not None and len(out) == before:
            # Only when the lexical checks passed: one clear message per bad value.
            wrong = self.fmt.check(value)
            if wrong is not None:
                out.append(Problem(at, f"{wrong} (got {describe(value)})", "format"))


def _bounds(
    value: float, minimum: float | None, maximum: float | None, at: Path, out: list[Problem]
) -> None:
    if minimum is not None and value < minimum:
        out.append(Problem(at, f"must be at least {minimum} (got {describe(value)})", "minimum"))
    if maximum is not None and value > maximum:
        out.append(Problem(at, f"must be at most {maximum} (got {describe(value)})", "maximum"))


class Int(Shape):
    """``type: integer`` (``1.0`` counts) with optional ``minimum``/``maximum``."""

    __slots__ = ("maximum", "minimum")

    def __init__(self, *, minimum: int | None = None, maximum: int | None = None) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not is_finite_number(value) or (isinstance(value, float) and not value.is_integer()):
            out.append(Problem(at, f"must be an integer, not {describe(value)}", "type"))
            return
        assert isinstance(value, int | float)
        _bounds(value, self.minimum, self.maximum, at, out)


class Num(Shape):
    """``type: number`` (finite) with optional ``minimum``/``maximum``."""

    __slots__ = ("maximum", "minimum")

    def __init__(self, *, minimum: float | None = None, maximum: float | None = None) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not is_finite_number(value):
            out.append(Problem(at, f"must be a finite number, not {describe(value)}", "type"))
            return
        assert isinstance(value, int | float)
        _bounds(value, self.minimum, self.maximum, at, out)


class Minimum(Shape):
    """A bare ``minimum`` (no ``type``): constrains numbers, ignores every other value."""

    __slots__ = ("minimum",)

    def __init__(self, minimum: float) -> None:
        self.minimum = minimum

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if is_finite_number(value):
            assert isinstance(value, int | float)
            _bounds(value, self.minimum, None, at, out)


class Bool(Shape):
    """``type: boolean``."""

    __slots__ = ()

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if not isinstance(value, bool):
            out.append(Problem(at, f"must be true or false, not {json_type(value)}", "type"))


class Const(Shape):
    """``const``: exactly this JSON value. ``why`` explains the rule in messages."""

    __slots__ = ("key", "value", "why")

    def __init__(self, value: object, *, why: str | None = None) -> None:
        self.value = value.value if isinstance(value, _PyEnum) else value
        self.key = json_key(value)
        self.why = why

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if json_key(value) != self.key:
            msg = f"must be {describe(self.value)} (got {describe(value)})"
            if self.why:
                msg += f"; {self.why}"
            out.append(Problem(at, msg, "const"))


class Enum(Shape):
    """``enum``: one of these JSON values. ``what`` names the set for long lists."""

    __slots__ = ("keys", "values", "what")

    def __init__(self, *values: object, what: str | None = None) -> None:
        self.values = tuple(v.value if isinstance(v, _PyEnum) else v for v in values)
        self.keys = frozenset(json_key(v) for v in self.values)
        self.what = what

    @classmethod
    def of(cls, members: Iterable[_PyEnum], *, what: str | None = None) -> Enum:
        """An ``enum`` of every member of a Python enumeration (their wire values)."""
        return cls(*(m.value for m in members), what=what)

    def check(self, value: object, at: Path, out: list[Problem]) -> None:
        if json_key(value) in self.keys:
            return
        if len(self.values) <= 10 or self.what is None:
            allowed = ", ".join(describe(v) for v in self.values)
            msg = f"must be one of {allowed} (got {describe(value)})"
        else:
            msg = f"must be one of the {len(self.values)} {self.what} (got {describe(value)})"
        out.append(Problem(at, msg, "enum"))


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
        # Once a member is reported wrong, a conditional that looks at it, or a further problem
        # inside it, would only add noise: the object is invalid already either way.
        faulty = {p.path[len(at)] for p in out[before:] if len(p.path) > len(at)}
        for rule in self.rules:
            if isinstance(rule, If) and not faulty.isdisjoint(rule.cond.inspects()):
                continue
            found = rule.problems(value, at)
            out.extend(p for p in found if len(p.path) <= len(at) or p.path[len(at)] not in faulty)


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
