"""A bounded memo of values computed from a document object, keyed by the object's identity.

In-process delivery hands the *same* Event dictionary to every agent, and several agents derive
the same value from it (its canonical text, its schema verdict). ``IdentityMemo`` lets the first
one compute it and the others reuse it. Each entry keeps its document referenced, so an ``id``
is never reused while remembered; documents must not be changed after they were published (no
code path does: every agent holds the same object). Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``get(obj, compute)`` returns ``compute(obj)``, computed once while ``obj`` is among the
    ``size`` objects seen last."""

    __slots__ = ("_entries", "size")

    def __init__(self, size: int = 8192) -> None:
        self.size = size
        self._entries: OrderedDict[int, tuple[K, V]] = OrderedDict()

    def get(self, obj: K, compute: Callable[[K], V]) -> V:
        """The value for ``obj`` (``compute`` raising leaves nothing remembered)."""
        key = id(obj)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute(obj)
        self._entries[key] = (obj, value)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value
