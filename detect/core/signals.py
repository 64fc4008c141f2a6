"""SIGTERM (what `timeout`, Slurm, Kubernetes and systemd send) handled as Ctrl-C is.

`Terminated` is a `KeyboardInterrupt`, so every place that finishes or rolls back the frame in
hand, closes its pools, unlinks its shared memory and writes its run file on Ctrl-C does the same
on SIGTERM; the command then says which signal stopped it and exits 143 (128 + 15).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise `Terminated` in the main thread (a no-op outside it, where Python cannot
    install handlers). Engines that start libraries installing their own handler (Ray) call it again."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """`terminate_as_interrupt` for the duration of the block; the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    terminate_as_interrupt()
    try:
        yield
    finally:
        if previous is not None:  # None: a handler installed outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def keep_sigterm_handler() -> Iterator[None]:
    """Whatever SIGTERM handler was in place before the block is in place after it.

    `ray.init` installs its own in the driver, which ended a SIGTERM'd run with a native abort dump
    (exit 134): restoring ours lets SIGTERM stop the job like Ctrl-C, record it and shut Ray down.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
