"""The ``format`` assertions the normative schemas use: ``uri`` and ``date-time``.

Owns :class:`Format` and the two checks. Section 2 makes every ``format`` an assertion, not an
annotation. ``uri`` is an absolute RFC 3986 URI in ASCII, checked over the whole string
(``ids.is_protocol_id``; a trailing line feed is refused). ``date-time`` is deliberately stricter
than generic JSON Schema ``date-time``: the project applies the section 2 Signed Document
timestamp profile (``timestamps.parse_timestamp``: years 0001-9999, no leap second, no
``-00:00``, whole string) to every timestamp it reads, signed or not. It must not perform I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..ids import is_protocol_id
from ..timestamps import parse_timestamp

__all__ = ["DATE_TIME", "URI", "Format"]


class Format:
    """A ``format`` assertion: a name and a checker returning ``None`` or what is wrong."""

    __slots__ = ("check", "name")

    def __init__(self, name: str, check: Callable[[str], str | None]) -> None:
        self.name = name
        self.check = check

    def __repr__(self) -> str:
        return f"Format({self.name!r})"


def _check_uri(text: str) -> str | None:
    if is_protocol_id(text):
        return None
    return "must be an absolute RFC 3986 URI (ASCII, with a scheme, nothing trailing)"


def _check_date_time(text: str) -> str | None:
    # Deliberately the section 2 Signed Document timestamp profile, not generic date-time: years
    # 0001-9999, no leap second, no -00:00, whole-string match (no trailing line feed).
    try:
        parse_timestamp(text)
    except ValueError as exc:
        return f"must be a protocol timestamp (RFC 3339 date-time, section 2 profile): {exc}"
    return None


#: ``format: uri``.
URI: Final = Format("uri", _check_uri)
#: ``format: date-time`` under the section 2 timestamp profile.
DATE_TIME: Final = Format("date-time", _check_date_time)
