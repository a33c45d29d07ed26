"""A bounded read-ahead: a thread pulls an iterator's next items while its consumer works.

The Parquet export reads Arrow batches from DuckDB and encodes them with pyarrow; both release
the GIL, so pulling the next batch on another thread while the last one is encoded keeps two
cores busy where a plain loop keeps one. ``ReadAhead`` holds at most ``depth`` items beyond the
one being consumed, re-raises the source's exception on the consumer's thread at the point the
failed item would have come, and ``close`` stops the thread and closes the source (a generator
holding a cursor releases it) even when the consumer stops early.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

__all__ = ["ReadAhead"]

_T = TypeVar("_T")


class ReadAhead(Generic[_T]):
    """Iterate ``source`` with up to ``depth`` items read ahead on a thread of its own."""

    def __init__(self, source: Iterator[_T], *, depth: int = 2) -> None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self._source = source
        self._depth = depth
        self._items: deque[_T] = deque()
        self._ready = threading.Condition()
        self._finished = False  # the source is exhausted or raised
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mwp-read-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for item in self._source:
                with self._ready:
                    while len(self._items) >= self._depth and not self._closed:
                        self._ready.wait()
                    if self._closed:
                        return
                    self._items.append(item)
                    self._ready.notify_all()
        except BaseException as exc:  # handed to the consumer, which raises it
            with self._ready:
                self._error = exc
        finally:
            close = getattr(self._source, "close", None)
            if close is not None:
                close()
            with self._ready:
                self._finished = True
                self._ready.notify_all()

    def __iter__(self) -> ReadAhead[_T]:
        return self

    def __next__(self) -> _T:
        with self._ready:
            while not self._items and not self._finished:
                self._ready.wait()
            if self._items:
                item = self._items.popleft()
                self._ready.notify_all()
                return item
            error, self._error = self._error, None
        if error is not None:
            raise error
        raise StopIteration

    def close(self) -> None:
        """Stop reading ahead and close the source; waits for an item being read to finish."""
        with self._ready:
            self._closed = True
            self._items.clear()
            self._ready.notify_all()
        self._thread.join()

    def __enter__(self) -> ReadAhead[_T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
