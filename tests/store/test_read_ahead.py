"""The export's read-ahead: same items in the same order, bounded, errors where they happened,
and a consumer that stops early leaves no thread and no open source behind."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mwp_local.store.read_ahead import ReadAhead


class _Counted:
    """A source that counts what was pulled from it and whether it was closed."""

    def __init__(self, items: list[int], fail_at: int | None = None) -> None:
        self.pulled = 0
        self.closed = False
        self.thread: threading.Thread | None = None
        self._gen = self._items(items, fail_at)

    def _items(self, items: list[int], fail_at: int | None) -> Iterator[int]:
        try:
            for n, item in enumerate(items):
                if n == fail_at:
                    raise ValueError(f"item {n} is broken")
                self.pulled += 1
                yield item
        finally:
            self.closed = True
            self.thread = threading.current_thread()

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        return next(self._gen)

    def close(self) -> None:
        self._gen.close()


@settings(max_examples=40, deadline=None)
@given(items=st.lists(st.integers(), max_size=30), depth=st.integers(1, 5))
def test_it_yields_what_the_source_yields_never_more_than_depth_ahead(
    items: list[int], depth: int
) -> None:
    source = _Counted(items)
    got = []
    with ReadAhead(source, depth=depth) as ahead:
        for item in ahead:
            got.append(item)
            # At most ``depth`` buffered plus the one the thread holds while it waits.
            assert source.pulled - len(got) <= depth + 1
    assert got == items
    assert source.closed


def test_a_source_error_comes_after_the_items_before_it_on_the_consumers_thread() -> None:
    source = _Counted([1, 2, 3, 4], fail_at=2)
    ahead = ReadAhead(source)
    assert next(ahead) == 1
    assert next(ahead) == 2
    with pytest.raises(ValueError, match="item 2 is broken"):
        next(ahead)
    with pytest.raises(StopIteration):
        next(ahead)
    ahead.close()
    assert source.closed


def test_closing_early_stops_the_thread_and_closes_the_source() -> None:
    source = _Counted(list(range(1000)))
    ahead = ReadAhead(source, depth=1)
    assert next(ahead) == 0
    ahead.close()
    assert source.closed
    assert source.pulled < 1000
    assert source.thread is not None and not source.thread.is_alive()
    assert source.thread is not threading.current_thread()


def test_depth_must_be_positive() -> None:
    with pytest.raises(ValueError, match="depth"):
        ReadAhead(iter([]), depth=0)
