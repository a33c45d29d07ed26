"""Private reasoning never enters a record (§4 invariant 13, §10.3, §13.2).

Owns the member names that mark private chain-of-thought, hidden prompts or raw internal memory
(``reasoning``, ``chainOfThought``, ``scratchpad``, ...), ``private_reasoning_paths`` (every
such member at any depth of a JSON value) and ``ensure_no_private_reasoning`` (refuse a value
that has one). It judges structure, not prose: a record states what was checked or chosen and
why in structured terms, never how a model thought about it. Used wherever a record may carry
free-form objects: Evidence ``details``, a selection basis, a review record. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import ErrorCode, ProtocolError

__all__ = ["PRIVATE_REASONING_NAMES", "ensure_no_private_reasoning", "private_reasoning_paths"]

#: Member names (lower case, letters and digits only) that would carry private reasoning.
PRIVATE_REASONING_NAMES = frozenset(
    {
        "chainofthought",
        "cot",
        "reasoning",
        "reasoningtrace",
        "privatereasoning",
        "thoughts",
        "thinking",
        "thoughtprocess",
        "scratchpad",
        "innermonologue",
        "internalmonologue",
        "hiddenprompt",
        "systemprompt",
        "prompt",
        "rawmemory",
        "agentmemory",
    }
)
_RULE = "§13.2 Evidence and decision records hold no private chain-of-thought"


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def is_private_reasoning_name(name: str) -> bool:
    """Whether a member called ``name`` would carry private reasoning."""
    return _normal(name) in PRIVATE_REASONING_NAMES


def private_reasoning_paths(value: Any, path: str = "") -> list[str]:
    """JSON-Pointer-like paths of every member whose name marks private reasoning."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}/{key}"
            if is_private_reasoning_name(str(key)):
                found.append(here)
            found += private_reasoning_paths(item, here)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found += private_reasoning_paths(item, f"{path}/{index}")
    return found


def ensure_no_private_reasoning(
    document: Any, what: str = "Evidence", *, rule: str = _RULE
) -> None:
    """Raise ``INVALID_COMMAND`` naming every private-reasoning member of ``document``."""
    paths = private_reasoning_paths(document)
    if paths:
        raise ProtocolError(
            ErrorCode.INVALID_COMMAND,
            f"{what} must not carry private reasoning; remove {', '.join(paths)} and state only "
            "what was checked and its result.",
            details={"paths": paths},
            rule=rule,
        )
