"""A consumer thread that takes numbered work in index order, so the producer never waits on it.

The producer (the thread running the model) hands over slots numbered 0, 1, 2, ... in any
order; each slot is a `Future` (drawing and writing in a pool) or a plain value. The consumer
thread resolves them strictly in index order and calls `consume` with each result. It never hangs
the producer: its own errors are re-raised in the producer, and the producer's `close()` always
sends the end marker (call it from `finally`).
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any

_END = object()


class OrderedConsumer:
    """Resolve numbered slots in order on a background thread; bound how many are unconsumed."""

    def __init__(self, consume: Callable[[Any], None], on_error: Callable[[int, BaseException], Any],
                 *, max_pending: int, initializer: Callable[[], object] | None = None) -> None:
        self._consume = consume
        self._initializer = initializer
        self._on_error = on_error
        self.max_pending = max_pending
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cond = threading.Condition()
        self._handed = 0
        self._consumed = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="detect-ordered-consumer", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        with self._cond:
            return self._handed - self._consumed

    def put(self, index: int, slot: Any) -> None:
        self._raise_if_failed()
        with self._cond:
            self._handed += 1
        self._queue.put((index, slot))

    def wait_for_room(self) -> None:
        """Block while more than `max_pending` slots are unconsumed (the producer must have handed
        over every index below its current one, or this could wait for a slot that never comes)."""
        with self._cond:
            while self._handed - self._consumed > self.max_pending and self._error is None:
                self._cond.wait(0.5)
        self._raise_if_failed()

    def close(self) -> None:
        """Send the end marker and wait until everything handed over is consumed; re-raise errors."""
        self._queue.put(_END)
        self._thread.join()
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        waiting: dict[int, Any] = {}
        next_index = 0
        try:
            if self._initializer is not None:
                self._initializer()
            while True:
                item = self._queue.get()
                if item is _END:
                    break
                index, slot = item
                waiting[index] = slot
                while next_index in waiting:
                    slot = waiting.pop(next_index)
                    if isinstance(slot, concurrent.futures.Future):
                        try:
                            slot = slot.result()
                        except Exception as err:  # one frame's worker failed: the handler decides
                            slot = self._on_error(next_index, err)
                    self._consume(slot)
                    next_index += 1
                    with self._cond:
                        self._consumed += 1
                        self._cond.notify_all()
        except BaseException as err:  # surfaced in the producer by put / wait_for_room / close
            with self._cond:
                self._error = err
                self._cond.notify_all()
