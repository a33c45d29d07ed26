"""The protocol timestamp profile (section 2) and exact instants.

A timestamp is an RFC 3339 ``date-time`` further restricted by the Signed Document Verification
Profile: year 0001–9999 with a valid Gregorian date, second 00–59 (no leap seconds), an optional
fraction of one or more digits that all take part in comparison, and no ``-00:00``. ``T`` and
``Z`` may be lower case. The lexical text is preserved beside the parsed instant and is never
rewritten; instants are exact (``fractions.Fraction`` seconds since the Unix epoch), so
``…:00.1000001Z`` and ``…:00.1Z`` compare correctly without rounding.

The sandbox applies this profile to every timestamp it reads, which is deliberately stricter than
generic JSON Schema ``date-time`` (that would admit leap seconds and ``-00:00``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction

_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"[Tt]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<offset>[Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_UNIX_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


@dataclass(frozen=True, slots=True, order=False)
class Timestamp:
    """A profile-valid timestamp: its exact lexical ``text`` and its ``instant``.

    Equality and ordering between ``Timestamp`` values use the instant, never the text.
    """

    text: str
    instant: Fraction
    #: The instant in whole microseconds since the Unix epoch (rounded down), worked out once
    #: with integers when the text is parsed (``instant`` stays the exact value; this is derived
    #: from it and takes no part in equality or hashing).
    epoch_micros: int = field(compare=False, repr=False)

    def __lt__(self, other: Timestamp) -> bool:
        return self.instant < other.instant

    def __le__(self, other: Timestamp) -> bool:
        return self.instant <= other.instant

    def __gt__(self, other: Timestamp) -> bool:
        return self.instant > other.instant

    def __ge__(self, other: Timestamp) -> bool:
        return self.instant >= other.instant

    def same_instant(self, other: Timestamp) -> bool:
        """Whether both denote the same instant, whatever their spelling."""
        return self.instant == other.instant


def parse_timestamp(text: object) -> Timestamp:
    """Parse ``text`` under the profile; raise ``ValueError`` saying what is wrong.

    Parsing is a pure function of the text and ``Timestamp`` is immutable, so valid texts are
    remembered (protocol documents repeat the same deadlines and instants many times)."""
    if not isinstance(text, str):
        raise ValueError("a timestamp must be a string")
    return _parse_text(text)


@functools.lru_cache(maxsize=65_536)
def _parse_text(text: str) -> Timestamp:
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise ValueError(f"{text!r} is not an RFC 3339 date-time")
    year, month, day = int(m["year"]), int(m["month"]), int(m["day"])
    hour, minute, second = int(m["hour"]), int(m["minute"]), int(m["second"])
    if year < 1:
        raise ValueError(f"{text!r}: year 0000 is outside the profile (0001-9999)")
    try:
        ordinal = _dt.date(year, month, day).toordinal()
    except ValueError as exc:
        raise ValueError(f"{text!r}: not a valid Gregorian date ({exc})") from None
    if hour > 23 or minute > 59:
        raise ValueError(f"{text!r}: hour or minute out of range")
    if second > 59:
        raise ValueError(f"{text!r}: leap seconds are not supported in MWP 0.1")
    offset = m["offset"]
    offset_seconds = 0
    if offset not in ("Z", "z"):
        if offset == "-00:00":
            raise ValueError(f"{text!r}: the unknown-local-offset spelling -00:00 is not allowed")
        oh, om = int(offset[1:3]), int(offset[4:6])
        if oh > 23 or om > 59:
            raise ValueError(f"{text!r}: offset out of range")
        offset_seconds = (oh * 3600 + om * 60) * (1 if offset[0] == "+" else -1)
    fraction = m["fraction"] or ""
    frac = Fraction(int(fraction), 10 ** len(fraction)) if fraction else Fraction(0)
    days = ordinal - _UNIX_EPOCH_ORDINAL
    seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds
    return Timestamp(
        text=text,
        instant=Fraction(seconds) + frac,
        epoch_micros=seconds * 1_000_000 + _fraction_micros(fraction),
    )


def _fraction_micros(digits: str) -> int:
    """Whole microseconds in a fraction of a second written as decimal ``digits`` (rounded
    down): the first six digits, padded with zeros. Exact, since the fraction is never
    negative: ``floor(0.d1d2...dn * 10**6)`` is the integer ``d1..d6``."""
    return int((digits + "000000")[:6])


def is_timestamp(text: object) -> bool:
    """Whether ``text`` satisfies the timestamp profile."""
    try:
        parse_timestamp(text)
    except ValueError:
        return False
    return True


def is_utc_z(text: str) -> bool:
    """Whether ``text`` uses the uppercase ``Z`` suffix that protected signed times require."""
    return text.endswith("Z")


def format_utc(epoch_micros: int) -> str:
    """Spell an instant (microseconds since the Unix epoch) as ``YYYY-MM-DDTHH:MM:SS[.fff]Z``.

    The sandbox writes milliseconds when the instant has no finer part, else microseconds, and
    nothing when it is a whole second; the result always parses back to the same instant.
    """
    seconds, micros = divmod(epoch_micros, 1_000_000)
    days, second_of_day = divmod(seconds, 86_400)
    hour, rest = divmod(second_of_day, 3600)
    minute, second = divmod(rest, 60)
    text = f"{_date_text(days)}T{hour:02d}:{minute:02d}:{second:02d}"
    if micros == 0:
        return text + "Z"
    if micros % 1000 == 0:
        return f"{text}.{micros // 1000:03d}Z"
    return f"{text}.{micros:06d}Z"


@functools.lru_cache(maxsize=4096)
def _date_text(days: int) -> str:
    """``YYYY-MM-DD`` of the day ``days`` after 1970-01-01 (a simulation spans few days)."""
    ordinal = _UNIX_EPOCH_ORDINAL + days
    if not 1 <= ordinal <= _dt.date.max.toordinal():
        raise OverflowError("date value out of range")
    day = _dt.date.fromordinal(ordinal)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
