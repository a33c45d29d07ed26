"""A small combinator language for the structure of protocol documents: the scalar shapes.

Owns the base :class:`Shape` and the scalar building blocks (:class:`Str`, :class:`Int`,
:class:`Enum`, ...); :mod:`.structures` adds arrays, objects and the applicators (:class:`Obj`,
:class:`Arr`, :class:`If`, ...). Together they are the language in which the area modules
transcribe the 22 normative JSON Schemas by hand, with the
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
from collections.abc import Iterable
from enum import Enum as _PyEnum
from typing import Final

from .ecma import Regex
from .formats import Format
from .problems import Path, Problem, describe, is_finite_number, json_key, json_type

__all__ = [
    "ANY",
    "AnyValue",
    "Bool",
    "Const",
    "Enum",
    "Int",
    "Minimum",
    "Num",
    "Path",
    "Problem",
    "Shape",
    "Str",
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
        return not self.problems(value)

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
