"""Shared memory this tool creates carries its owner's pid in its name, so leftovers can be found.

A run killed outright (SIGKILL of the process group, the OOM killer) cannot unlink its frame slots
nor let multiprocessing's resource tracker do it: 4 x 8 MB slots and the pool's semaphores stay in
/dev/shm until reboot. Slots are named `detect-<pid>-<n>-<random>` and semaphores
`sem.detect-<pid>-<random>`; before a run starts render processes it removes every such name
whose process is gone (`sweep_stale`). Names of live processes, and anyone else's, are left alone.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import re
import secrets
from pathlib import Path

SHM_DIR = Path("/dev/shm")
PREFIX = "detect"
_OURS = re.compile(rf"^(?:sem\.)?{PREFIX}-(\d+)-")
_counter = itertools.count()


def slot_name() -> str:
    """A fresh name for a frame slot of this process."""
    return f"{PREFIX}-{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"


def name_semaphores() -> None:
    """Semaphores this process creates from now on (a process pool's queues and locks) carry its pid.

    multiprocessing names them from the process's `semprefix` ("/mp"); it has no public setter,
    so the value is set where `multiprocessing.synchronize` reads it.
    """
    config = getattr(multiprocessing.current_process(), "_config", None)
    if isinstance(config, dict):
        config["semprefix"] = f"/{PREFIX}-{os.getpid()}"


def sweep_stale(directory: Path = SHM_DIR) -> list[str]:
    """Unlink this tool's shared-memory names whose process has ended; the names removed."""
    try:
        entries = os.listdir(directory)
    except OSError:  # no /dev/shm (macOS, Windows)
        return []
    removed = []
    for name in entries:
        match = _OURS.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):  # another process swept it first, or it is not ours to remove
            (directory / name).unlink()
            removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours
        return True
    return True
