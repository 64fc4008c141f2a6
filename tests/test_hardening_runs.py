"""Issue 31, items 10-13: a run folder never mixes settings, labels of another segment are named as
such, `--bootstrap` is bounded like the other sizing flags, and an interrupt advises `--resume`
only to the commands that take it. Each ends with correct output or one line, no "unexpected"."""

from __future__ import annotations

import io

import pytest

from detect.cli import main
from detect.core.signals import Terminated


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# Item 12 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("replicates", ["100001", "100000000", "1000000000000"])
def test_a_bootstrap_beyond_a_hundred_thousand_is_a_usage_error_naming_the_range(tmp_path, replicates):
    code, _, err = run_cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c"),
                            "--bootstrap", replicates])
    assert code == 2
    assert f"argument --bootstrap: must be between 0 and 100,000, got {replicates}" in err
    assert "unexpected" not in err
    assert not (tmp_path / "c").exists()


# Item 13 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["compare", "model"])
@pytest.mark.parametrize(("stop", "code", "line"), [
    (KeyboardInterrupt, 130, "detect: interrupted; rerun the command to start again\n"),
    (Terminated, 143, "detect: terminated (SIGTERM); rerun the command to start again\n"),
])
def test_an_interrupted_command_without_resume_does_not_advise_resume(tmp_path, monkeypatch, command, stop, code,
                                                                      line):
    def stopped(*_args: object) -> int:
        raise stop()

    monkeypatch.setattr(f"detect.cli.parser.cmd_{command}", stopped)
    argv = (["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c")]
            if command == "compare" else ["model", str(tmp_path)])
    assert run_cli(argv) == (code, "", line)


def test_an_interrupted_run_still_advises_resume(tmp_path, monkeypatch):
    def stopped(*_args: object) -> int:
        raise KeyboardInterrupt()

    monkeypatch.setattr("detect.cli.parser.cmd_run", stopped)
    assert run_cli(["run", str(tmp_path), "--out", str(tmp_path / "o")]) == (
        130, "", "detect: interrupted; rerun with --resume to continue where it stopped\n")
