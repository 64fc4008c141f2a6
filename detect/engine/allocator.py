"""Keep freed frame buffers mapped: glibc would hand them back to the kernel after every frame.

Every camera image passes through several multi-megabyte buffers (the decoded frame, the drawn
copy, the PNG encoder's scratch space, Pillow's images). With glibc's default settings a thread's
arena trims its free top memory as soon as it exceeds 128 KB, so each frame's buffers come back as
fresh pages: about 12,000 page faults and 36 ms of kernel time per image here, a fifth of the whole
pipeline's CPU. A large top pad makes the arenas keep that memory for the next frame (measured:
~240 faults and ~3 ms per image). Memory stays bounded by what the pipeline holds at its peak;
it is simply not returned between frames.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys

# From glibc's malloc.h.
M_TOP_PAD = -2
TOP_PAD_BYTES = 256 << 20
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
    return mallopt(M_TOP_PAD, TOP_PAD_BYTES) == 1
