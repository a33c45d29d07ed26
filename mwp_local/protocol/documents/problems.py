"""Problems found in a JSON value, where they are, and JSON value helpers.

Owns :class:`Problem` (a path, a plain-language message and the JSON Schema keyword at fault),
the way a path is spelled for readers (``payload.acceptanceCriteria[0].evidenceRequired``), and
the small JSON helpers the shapes share: JSON equality keys, JSON type names and compact value
previews for messages. It must not know any protocol document or perform I/O.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "Path",
    "Problem",
    "describe",
    "is_finite_number",
    "json_key",
    "json_type",
    "render_path",
]

#: Where a value sits in a document: member names and array indexes from the root.
Path = tuple[str | int, ...]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def render_path(path: Path) -> str:
    """Spell a path the way a reader writes it: ``payload.criteria[0]["urn:x"]``."""
    if not path:
        return "(document)"
    parts: list[str] = []
    for step in path:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        elif _NAME.fullmatch(step):
            parts.append(f".{step}" if parts else step)
        else:
            parts.append(f"[{json.dumps(step, ensure_ascii=False)}]")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a document does not conform: where, what, and the JSON Schema keyword."""

    path: Path
    message: str
    keyword: str

    @property
    def where(self) -> str:
        """The path as text (``(document)`` for the root)."""
        return render_path(self.path)

    def to_json(self) -> dict[str, str]:
        """The problem as a JSON object, for error ``details``."""
        return {"path": self.where, "message": self.message}

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


# --------------------------------------------------------------------------- JSON helpers


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def describe(value: object, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_key(value: object) -> object:
    """A hashable key such that two JSON values are equal exactly when their keys are equal.

    Numbers compare by value (``1`` and ``1.0`` are equal, integral floats become exact ints),
    booleans are not numbers, object member order does not matter.
    """
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, float):
        if value.is_integer():
            return ("num", int(value))
        return ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("arr", tuple(json_key(item) for item in value))
    if isinstance(value, dict):
        return ("obj", frozenset((k, json_key(v)) for k, v in value.items()))
    if isinstance(value, Enum):
        return json_key(value.value)
    return ("other", id(value))


def is_finite_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)
