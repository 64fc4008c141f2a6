"""Hypothesis' profiles, loaded on import (tests/conftest.py imports this first): `ci` (CI=true) draws
the full number of examples, `dev` a fifth of them, so a developer's run is quick and CI's is
thorough; HYPOTHESIS_PROFILE=ci runs CI's locally. A test asks for a share of the profile's examples
(`examples(share)`), smaller when an example costs more. No deadline: TensorFlow's first call takes
seconds on a busy machine."""

from __future__ import annotations

import os

from hypothesis import settings

from helpers.paths import IN_CI

settings.register_profile("ci", max_examples=300, deadline=None, print_blob=True)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if IN_CI else "dev"))


def examples(share: float) -> int:
    """`share` of the loaded profile's examples (ci: 300, dev: 60), at least one."""
    return max(1, round(settings().max_examples * share))
