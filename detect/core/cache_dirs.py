"""Where `detect` keeps what it may rebuild: `$XDG_CACHE_HOME/detect`, else `~/.cache/detect`.

The converted models (when they cannot sit beside the model), the fetched npm packages, and the
state matplotlib and Keras would otherwise write into the home folder all go under it.
"""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/detect` (an empty variable counts as unset), else `~/.cache/detect`."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "detect"
