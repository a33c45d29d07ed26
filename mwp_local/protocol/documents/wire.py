"""The bridge between typed document values and wire JSON.

Owns :class:`WireObject`, the base of every typed builder: a frozen, slotted, keyword-only
dataclass whose snake_case fields map to lowerCamelCase wire members. ``to_json`` emits the wire
object (omitting optional fields that are ``None``; required fields are always emitted),
``from_json`` validates a wire object against the class's shape and then builds the value, and
``__post_init__`` validates a value built by hand, so that no invalid document value exists.
The conversion is driven by the field annotations (nested objects, tuples for arrays, string
enumerations, free-form ``dict`` objects), so each class declares its fields once.

It also owns :func:`validate_shape`, the single place a shape failure becomes a
``ProtocolError(SCHEMA_VALIDATION_FAILED)``. It must not perform I/O or know any particular
document.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Any, ClassVar, Self, cast

from ..errors import ErrorCode, ProtocolError
from .shapes import Problem, Shape

__all__ = ["WireObject", "camel", "schema_error", "validate_shape"]

#: True while ``from_json`` builds a value it has already validated as a whole.
_TRUSTED: ContextVar[bool] = ContextVar("_TRUSTED", default=False)


def camel(name: str) -> str:
    """``action_id`` -> ``actionId``: the wire spelling of a field name."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def schema_error(what: str, found: list[Problem]) -> ProtocolError:
    """The ``SCHEMA_VALIDATION_FAILED`` error for ``found`` (non-empty) problems in ``what``."""
    first = found[0]
    more = f" (and {len(found) - 1} more problem{'s' if len(found) > 2 else ''})"
    explanation = f"The {what} does not conform to its schema: {first}"
    if len(found) > 1:
        explanation += more
    return ProtocolError(
        ErrorCode.SCHEMA_VALIDATION_FAILED,
        explanation,
        details={"schema": what, "path": first.where, "problems": [p.to_json() for p in found]},
        stage="schema",
    )


def validate_shape(shape: Shape, doc: object, what: str) -> None:
    """Raise ``SCHEMA_VALIDATION_FAILED`` naming every problem of ``doc`` against ``shape``."""
    found = shape.problems(doc)
    if found:
        raise schema_error(what, found)


@contextmanager
def _trusted() -> Iterator[None]:
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


# --------------------------------------------------------------------------- codecs

Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]  # (decode, encode)


def _same(value: Any) -> Any:
    return value


def _integer(value: Any) -> Any:
    # JSON Schema ``integer`` accepts 1.0; the typed value holds the exact int.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _encode_enum(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy_json(v) for v in value]
    return value


def _codec(hint: Any) -> Codec:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or origin is typing.Literal:
        return _copy_json, _copy_json
    if hint is int:
        return _integer, _same
    if hint in (str, bool, float):
        return _same, _same
    if isinstance(hint, type) and issubclass(hint, Enum):
        enum_type = hint
        return (lambda v: enum_type(v)), _encode_enum
    if isinstance(hint, type) and issubclass(hint, WireObject):
        cls = hint
        return cls._decode, _encode_value
    if origin is tuple:
        item_decode, item_encode = _codec(args[0])
        return (
            lambda v: tuple(item_decode(x) for x in v),
            lambda v: [item_encode(x) for x in v],
        )
    if origin in (dict, Mapping) or hint is dict:
        value_hint = args[1] if args else Any
        if value_hint is Any:
            return _copy_json, _copy_json
        value_decode, value_encode = _codec(value_hint)
        return (
            lambda v: {k: value_decode(x) for k, x in v.items()},
            lambda v: {k: value_encode(x) for k, x in v.items()},
        )
    if origin in (typing.Union, types.UnionType):
        return _union_codec(tuple(a for a in args if a is not type(None)))
    raise TypeError(f"no wire codec for {hint!r}")


def _union_codec(options: tuple[Any, ...]) -> Codec:
    if len(options) == 1:
        return _codec(options[0])
    if set(options) == {int, float}:
        return _same, _same
    enums = [o for o in options if isinstance(o, type) and issubclass(o, Enum)]
    if enums and all(o is str or o in enums for o in options):
        # A closed vocabulary that also admits open spellings (extension kinds).
        def decode_open(value: Any) -> Any:
            for enum_type in enums:
                try:
                    return enum_type(value)
                except ValueError:
                    continue
            return value

        return decode_open, _encode_enum
    if all(isinstance(o, type) and issubclass(o, WireObject) for o in options):
        classes: tuple[type[WireObject], ...] = options

        def decode_variant(value: Any) -> Any:
            for cls in classes:
                if cls.__shape__.accepts(value):
                    return cls._decode(value)
            raise ValueError(f"no variant of {options} accepts {value!r}")

        return decode_variant, _encode_value
    raise TypeError(f"no wire codec for the union {options!r}")


def _encode_value(value: Any) -> Any:
    if isinstance(value, WireObject):
        return value.to_json()
    return _copy_json(value)


@dataclasses.dataclass(frozen=True, slots=True)
class _Member:
    attr: str
    wire: str
    required: bool
    decode: Callable[[Any], Any]
    encode: Callable[[Any], Any]


_PLANS: dict[type[Any], tuple[_Member, ...]] = {}


def _plan(cls: type[WireObject]) -> tuple[_Member, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        members = []
        fields: tuple[dataclasses.Field[Any], ...] = dataclasses.fields(cast(Any, cls))
        for f in fields:
            decode, encode = _codec(hints[f.name])
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            wire = f.metadata.get("wire", camel(f.name))
            members.append(_Member(f.name, wire, required, decode, encode))
        plan = _PLANS[cls] = tuple(members)
    return plan


class WireObject:
    """Base of the typed builders: ``to_json``/``from_json`` and validation on construction.

    Subclasses are ``@dataclass(frozen=True, slots=True, kw_only=True)`` classes that set
    ``__shape__`` (the shape the wire object must satisfy) and ``__what__`` (how messages name
    it, e.g. ``"command"``).
    """

    __slots__ = ()
    __shape__: ClassVar[Shape]
    __what__: ClassVar[str]

    def __post_init__(self) -> None:
        if not _TRUSTED.get():
            validate_shape(self.__shape__, self.to_json(), self.__what__)

    def to_json(self) -> dict[str, Any]:
        """The wire object: lowerCamelCase members, optional ``None`` fields omitted."""
        doc: dict[str, Any] = {}
        for m in _plan(type(self)):
            value = getattr(self, m.attr)
            if value is None and not m.required:
                continue
            doc[m.wire] = m.encode(value)
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> Self:
        """Validate ``doc`` against the schema, then build the typed value.

        Raises ``ProtocolError(SCHEMA_VALIDATION_FAILED)`` naming every problem.
        """
        validate_shape(cls.__shape__, doc, cls.__what__)
        return cls.from_validated_json(doc)

    @classmethod
    def from_validated_json(cls, doc: Mapping[str, Any]) -> Self:
        """Build the typed value of a wire object the caller has just validated."""
        with _trusted():
            return cls._decode(doc)

    @classmethod
    def _decode(cls, doc: Mapping[str, Any]) -> Self:
        kwargs = {m.attr: m.decode(doc[m.wire]) for m in _plan(cls) if m.wire in doc}
        return cls(**kwargs)
