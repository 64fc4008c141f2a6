"""What a newcomer's first `make demo` prints before the demo itself: the install's recipe, as make
echoes it (`make -n` shows the same lines without running them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from helpers.paths import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def echoed(*targets: str) -> list[str]:
    """The lines make echoes for `targets`, every one remade (-B), none run (-n)."""
    done = subprocess.run(["make", "-n", "-B", "--no-print-directory", *targets], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.splitlines()


def test_the_install_says_what_its_quiet_minute_is_and_echoes_no_comment():
    """pip is quiet while TensorFlow installs (about a minute): the line before says so; the
    Makefile's comments stay in the Makefile (recipe lines starting with # were echoed)."""
    lines = echoed("install")
    assert lines[1] == ('echo "make: installing detect and its dependencies into .venv/ (TensorFlow among them: '
                        'about a minute, once)"')
    assert lines[2].endswith("-m venv .venv")
    assert not [line for line in lines if line.lstrip().startswith("#") or " # " in line]


def test_make_test_echoes_no_comment():
    assert not [line for line in echoed("test") if " # " in line or line.lstrip().startswith("#")]
