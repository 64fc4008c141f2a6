"""What `detect` exits with, in one place (the package docstring says when each is used)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FRAMES_FAILED = 1  # some frames (or segments) failed; the manifest or run file lists them
EXIT_USAGE = 2  # usage, input, model or output errors, and unexpected ones
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT
EXIT_TERMINATED = 143  # SIGTERM: 128 + SIGTERM
