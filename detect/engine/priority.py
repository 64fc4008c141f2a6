"""Let the model win the CPU: threads that draw and encode run at a lower scheduling priority.

On a CPU-only machine the model's own threads want nearly every core. When a drawing or
encoding thread takes a core in the middle of a model call, the call waits for its slowest
thread, and both lose. Lowered priority makes output work fill the gaps between model calls
instead (measured on the 2-core bench machine: default outputs 9.72 -> 10.25 images/s, medians of
3 interleaved runs). Where CPU is spare (a GPU box), priority changes nothing.
"""

from __future__ import annotations

import os
import sys
import threading

# Linux nice value for output threads (0 normal, 19 lowest). Threads only ever lower their own.
BACKGROUND_NICE = 10


def lower_thread_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Give the calling thread nice value `nice` (Linux sets it per thread); True if it did.
    Never raises the priority, and changes nothing elsewhere or when the system refuses."""
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, tid) >= nice:
            return False
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except OSError:
        return False
    return True
