"""Process tuning for a CPU-bound model: keep freed frame buffers mapped, and let the model win the CPU.

Memory. Keep freed frame buffers mapped: glibc would hand them back to the kernel after every frame.

Every camera image passes through several multi-megabyte buffers (the decoded frame, the drawn
copy, the PNG encoder's scratch space, Pillow's images). With glibc's default settings a thread's
arena trims its free top memory as soon as it exceeds 128 KB, so each frame's buffers come back as
fresh pages: about 12,000 page faults and 36 ms of kernel time per image here, a fifth of the whole
pipeline's CPU. A large top pad makes the arenas keep that memory for the next frame (measured:
~240 faults and ~3 ms per image). Memory stays bounded by what the pipeline holds at its peak;
it is simply not returned between frames.

The same goes for blocks glibc maps on their own (above the mmap threshold, 128 KB to start
with): a fresh render process maps fpng's multi-megabyte output buffer anew for every frame, and
PNG encoding cost 21-25 ms a frame instead of 12 (measured). A fixed 32 MB threshold (glibc's
largest default) serves those blocks from the arenas too.

Priority. Let the model win the CPU: threads that draw and encode run at a lower scheduling priority.

On a CPU-only machine the model's own threads want nearly every core. When a drawing or
encoding thread takes a core in the middle of a model call, the call waits for its slowest
thread, and both lose. Lowered priority makes output work fill the gaps between model calls
instead (measured on the 2-core bench machine: default outputs 9.72 -> 10.25 images/s, medians of
3 interleaved runs). Where CPU is spare (a GPU box), priority changes nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
import threading

# From glibc's malloc.h.
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
TOP_PAD_BYTES = 256 << 20
MMAP_THRESHOLD_BYTES = 32 << 20
# Set by a user who tunes glibc themselves; then we leave it alone.
GLIBC_ENV = ("MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


@functools.cache
def keep_freed_memory() -> bool:
    """Raise glibc's top pad for this process; True if applied (False off glibc or when the
    user already set glibc's malloc variables). Call early, before the pipeline starts threads;
    calling again is free (Ray tasks call it in every worker process they land in).
    """
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return False
    if any(name in os.environ for name in GLIBC_ENV):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(M_TOP_PAD, TOP_PAD_BYTES) == 1 and mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1


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
