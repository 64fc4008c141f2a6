"""Ctrl-C and SIGTERM (what `timeout`, Slurm, Kubernetes and systemd send) stop a command cleanly.

`Terminated` is a `KeyboardInterrupt`, so every place that finishes or rolls back the frame in
hand, closes its pools, unlinks its shared memory and writes its run file on Ctrl-C does the same
on SIGTERM; the command then says which signal stopped it and exits 143 (128 + 15).

Python raises a signal's exception at the next bytecode the main thread runs, and a library that
runs Python from C++ can swallow it there. TensorFlow does, in every `next()` of a tf.data
iterator: it reads the op's output shapes through `TensorShape.__len__`, twice, and clears
whatever that raises (the shape is then "unknown"; when only the first read failed, it writes
past the buffer sized by it and the process aborts), and it deletes the call's executor in a
`__del__`, whose exceptions Python only prints. A Ctrl-C landing there was lost and the run went
on to its end, exit 0 (18 of 1,000 signals sent to a loop over a tf.data iterator). So the main
thread calls into TensorFlow inside `deferred_interrupts` (the exception waits for the call to
return, as it had to before Python could run the handler at all), and every signal is remembered
until the command ends: `raise_if_interrupted` raises one whose exception went missing elsewhere
(while the model loaded, in a finalizer), before the next segment and, at the latest, as the
command ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: type[KeyboardInterrupt] | None = None  # the first stop this command got, raised or not
_deferring = False
_depth = 0  # nested `interrupts_as_exceptions` blocks (the CLI's import guard, then the command)


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM."""


def _on_signal(signum: int, frame: Any) -> None:
    global _received
    stop = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    _received = _received or stop
    if not _deferring:
        raise stop()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """For the block: SIGTERM raises `Terminated`, Ctrl-C `KeyboardInterrupt`, and each is
    remembered until the outermost block ends. A Ctrl-C that is ignored (a background job) or
    handled by the program embedding us stays so. A no-op outside the main thread, where Python
    cannot install handlers; the previous handlers come back after."""
    global _depth, _received
    if not _in_main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    signal.signal(signal.SIGTERM, _on_signal)
    if previous[signal.SIGINT] in (signal.default_int_handler, _on_signal):
        signal.signal(signal.SIGINT, _on_signal)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _received = None
        for sig, handler in previous.items():
            if handler is not None:  # None: a handler installed outside Python, which cannot be put back
                signal.signal(sig, handler)


def deferred_interrupts() -> contextlib.AbstractContextManager[None]:
    """A stop that arrives inside the block is raised when the block ends, not inside it: for calls
    into a library that may swallow it (TensorFlow, see the module docstring). The block must wait
    only on that library, never on our own threads or locks. A no-op outside the main thread."""
    return _Deferred()


class _Deferred(contextlib.AbstractContextManager[None]):
    def __enter__(self) -> None:
        global _deferring
        self._outermost = _in_main_thread() and not _deferring
        if self._outermost:
            _deferring = True

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        global _deferring
        if self._outermost:
            _deferring = False
            if exc_type is None:
                raise_if_interrupted()


def raise_if_interrupted() -> None:
    """Raise the stop this command already received if its exception never got here (a library
    swallowed it); nothing otherwise, and nothing outside the main thread."""
    if _received is not None and _in_main_thread():
        raise _received()


@contextlib.contextmanager
def keep_signal_handlers() -> Iterator[None]:
    """Whatever SIGINT and SIGTERM handlers were in place before the block are in place after it.

    `ray.init` installs its own SIGTERM handler in the driver, which ended a SIGTERM'd run with a
    native abort dump (exit 134): restoring ours lets SIGTERM stop the job like Ctrl-C, record it
    and shut Ray down.
    """
    if not _in_main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
