"""Peak memory of a command, measured in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys

# A wrapper whose only child is the command: its children's peak resident set is the command's.
_WRAPPER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr,
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def peak_rss(argv: list[str], timeout: float = 300) -> dict:
    """`argv` run to its end: {"code", "stdout", "stderr", "peak_mb"} (Linux: ru_maxrss is in KiB)."""
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], capture_output=True, text=True, timeout=timeout,
                          check=True)
    return json.loads(done.stdout)


def detect(*argv: str) -> list[str]:
    """The `detect` command as a process of this interpreter."""
    return [sys.executable, "-m", "detect.cli", *argv]
