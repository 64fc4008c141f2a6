"""What `detect` prints: status lines before the slow steps, every line under 100 characters, prose
wrapped at list boundaries, paths under the working directory written relative to it."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.cli.console import WIDTH, relative, say, wrap

pytestmark = pytest.mark.usefixtures("load_each_model_once")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*args: object, terminal: bool = False) -> tuple[int, list[str], list[str]]:
    out, err = (Terminal(), Terminal()) if terminal else (io.StringIO(), io.StringIO())
    code = main([str(a) for a in args], stdout=out, stderr=err)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.mark.slow  # runs the commands end to end
def test_every_line_the_main_commands_print_is_under_100_characters(tiny_v2_path, stub_dynamic_dir, tmp_path,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)  # as a user types them: results/ below where they stand
    shutil.copytree(tiny_v2_path.parents[1], tmp_path / "split")  # camera_image/ and its labels in camera_box/
    inputs = tmp_path / "split" / "camera_image"
    model = ("--model", stub_dynamic_dir)
    # Absolute paths under the working directory, printed relative to it (render processes a
    # previous test started keep their own working directory: relative paths would land there).
    results, run_dir = tmp_path / "results", tmp_path / "run"
    commands = [
        ("segment", inputs / tiny_v2_path.name, "--out", results, *model),
        ("run", inputs, "--out", run_dir, "--mp4", *model),
        ("run", inputs, "--out", run_dir, *model),  # resumed: everything skipped
        ("eval", results),
        ("export", "coco", results, "--out", tmp_path / "coco"),
        ("report", run_dir),
        ("gif", results, "--mp4"),
        ("track", run_dir),
        ("info", inputs / tiny_v2_path.name),
        ("model", stub_dynamic_dir),
        ("compare", results, run_dir, "--out", tmp_path / "compared", "--bootstrap", "20"),
    ]
    long_lines = []
    for command in commands:
        code, out, err = run(*command, terminal=True)
        assert code == 0, (command, err)
        long_lines += [(command[0], line) for line in out + err if len(line) >= 100]
    assert long_lines == []


@pytest.mark.slow  # runs the commands end to end
def test_a_segment_says_what_it_is_doing_before_each_slow_step_and_nothing_when_quiet(tiny_v2_path, stub_dynamic_dir,
                                                                                      tmp_path):
    code, _, err = run("segment", tiny_v2_path, "--out", tmp_path / "a", "--model", stub_dynamic_dir)
    assert code == 0
    steps = [line.split(" ", 2)[1] for line in err if line.startswith("detect: ") and not line.startswith(
        "detect: note")]
    assert steps == ["disk:", "loading", "evaluating", "writing"]
    assert err[1].startswith("detect: loading stub model (fixed boxes, not a detector)")
    code, out, err = run("segment", tiny_v2_path, "--out", tmp_path / "b", "--model", stub_dynamic_dir, "--quiet")
    assert (code, out, err) == (0, [], [])


@pytest.mark.slow  # runs the commands end to end
def test_the_commands_over_results_say_what_they_do(tiny_v2_path, stub_dynamic_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run("segment", tiny_v2_path, "--out", tmp_path / "out", "--model", stub_dynamic_dir, "--quiet")[0] == 0
    segment = Path("out") / TINY_SEGMENT  # as printed: relative to the working directory
    assert run("gif", tmp_path / segment, "--mp4")[2][0] == f"detect: making the GIF and MP4 animations of {segment}"
    assert run("track", tmp_path / segment)[2][0] == f"detect: tracking the detections of {segment}"
    assert run("report", tmp_path / segment)[2][0] == f"detect: writing the report pages of {segment}"
    code, out, err = run("eval", tmp_path / segment)
    assert err[0] == f"detect: evaluating {segment} against Waymo's labels"
    assert out[-3:] == ["wrote eval.json, pr_curves.png, thresholds.png, matches.parquet, images.parquet,",
                        f"  tracking.parquet in {segment}", f"report: {segment}/report.html"]  # the page written again
    assert err[1] == f"detect: writing the report pages of {segment}"


def test_long_lines_break_between_list_items_first():
    text = ("at threshold 0.5 (COCO protocol: IoU 0.5): VEHICLE 0 hits, 5 false alarms, 50 missed; PEDESTRIAN 0 "
            "hits, 5 false alarms, 15 missed; CYCLIST 0 hits, 0 false alarms, 1 missed")
    assert wrap(text) == [
        "at threshold 0.5 (COCO protocol: IoU 0.5): VEHICLE 0 hits, 5 false alarms, 50 missed;",
        "  PEDESTRIAN 0 hits, 5 false alarms, 15 missed; CYCLIST 0 hits, 0 false alarms, 1 missed"]
    assert wrap("AP50: T0 0.0, T1 0.1, T2 0.2, T3 0.3, T4 0.4, T5 0.5", width=30) == [
        "AP50: T0 0.0, T1 0.1, T2 0.2,", "  T3 0.3, T4 0.4, T5 0.5"]


def test_wrapping_keeps_indentation_short_lines_and_words_longer_than_a_line():
    assert wrap("short") == ["short"]
    lines = wrap("  failed FRONT: " + "word " * 30)
    assert [len(line) for line in lines] == [95, 73] and lines[1].startswith("    word")
    assert " ".join(lines).split() == ("failed FRONT: " + "word " * 30).split()
    path = "/" + "x" * 120
    assert wrap(f"error: {path} is missing") == [f"error: {path}", "  is missing"]  # breaking it gains nothing
    assert all(len(line) <= WIDTH for line in wrap("a, " * 100))


def test_paths_under_the_working_directory_are_written_relative_to_it(tmp_path):
    cwd = tmp_path / "work"
    assert relative(f"wrote {cwd}/results/seg/report.html", cwd) == "wrote results/seg/report.html"
    assert relative(f"{cwd}/a and {cwd}2/b and /x{cwd}/c", cwd) == f"a and {cwd}2/b and /x{cwd}/c"
    assert relative("/etc/passwd", Path("/")) == "/etc/passwd"
    stream = io.StringIO()
    say(f"{Path.cwd()}/results: " + "y " * 60, stream)
    assert stream.getvalue().splitlines()[0].startswith("results: y y")


def test_an_error_is_one_line_in_a_log_and_wrapped_on_a_terminal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / ("a_folder_with_a_long_name_" * 3) / "results"
    log, terminal = io.StringIO(), Terminal()
    assert main(["eval", str(missing), "--quiet"], stderr=log) == 2
    assert main(["eval", str(missing), "--quiet"], stderr=terminal) == 2
    relative_path = missing.relative_to(tmp_path)
    assert log.getvalue() == f"detect: error: {relative_path}: no such results directory\n"
    lines = terminal.getvalue().splitlines()
    assert len(lines) == 3 and all(len(line) < 100 for line in lines)
    assert " ".join(lines).split() == log.getvalue().split()


def test_the_loading_line_says_when_the_first_run_converts_the_model(stub_dynamic_dir, monkeypatch):
    import detect.engine.loading
    from detect.engine.loading import loading_line
    from detect.engine.spec import ModelSpec
    from detect.model.runtimes import CpuPlan

    spec = ModelSpec(path=stub_dynamic_dir, runtime="auto")
    plan = CpuPlan("openvino", version="2026.4.1", converted=())
    monkeypatch.setattr(detect.engine.loading, "cpu_plan", lambda *args: plan)
    assert loading_line(spec) == (f"loading stub model (fixed boxes, not a detector), dynamic batch from {stub_dynamic_dir}; "
                                  f"converting it for OpenVINO (once, 3-10 s)")
    plan = CpuPlan("openvino", version="2026.4.1", converted=(object(),))  # converted before: nothing to say
    assert loading_line(spec).endswith(f"from {stub_dynamic_dir}")
    assert loading_line(ModelSpec(path=stub_dynamic_dir, runtime="tensorflow")).endswith(f"from {stub_dynamic_dir}")


@pytest.mark.parametrize(("args", "line"), [
    (["segment", "x", "--threshold", "30"], "detect segment: error: argument --threshold: must be between 0 and 1, got 30"),
    (["segment", "x", "--treshold", "0.3"],
     "detect segment: error: unrecognized arguments: --treshold 0.3; did you mean --threshold?"),
    (["run", "x", "--max-frmes=3"], "detect run: error: unrecognized arguments: --max-frmes=3; did you mean --max-frames?"),
    (["eval", "x", "--zzz"], "detect eval: error: unrecognized arguments: --zzz"),
    (["segmnet", "x"], "detect: error: argument COMMAND: invalid choice: 'segmnet'; did you mean 'segment'?"),
    (["segment", "x", "--frame-format", "gif"],
     "detect segment: error: argument --frame-format: invalid choice: 'gif' (choose from 'png', 'jpg')"),
    (["segment"], "detect segment: error: the following arguments are required: PATH (`detect segment --help` shows "
                  "its usage)"),
])
def test_a_flag_error_is_one_line_naming_the_flag_meant_without_the_usage(args, line):
    """What is wrong, and the flag or command meant when one is close: not the 18 lines of usage
    argparse prints before it (`--help` prints them)."""
    out, err = io.StringIO(), io.StringIO()
    assert main(args, stdout=out, stderr=err) == 2
    assert (out.getvalue(), err.getvalue()) == ("", line + "\n")


@pytest.mark.slow
def test_jpeg_names_the_jpg_frame_format(tiny_v2_path, stub_dynamic_dir, tmp_path):
    args = ["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(tmp_path), "--quiet",
            "--no-eval", "--no-report", "--no-gif", "--cameras", "FRONT", "--frame-format", "jpeg"]
    assert main(args) == 0
    frames = sorted(p.name for p in (tmp_path / TINY_SEGMENT / "frames" / "FRONT").iterdir())
    assert len(frames) == 3 and all(name.endswith(".jpg") for name in frames)


@pytest.mark.slow
def test_detect_segment_takes_a_directory_of_one_segment_and_refuses_one_of_many(tiny_v2_path, stub_dynamic_dir,
                                                                                 tmp_path):
    """As the README says: a `camera_image/` directory is every segment in it, one for `detect segment`."""
    args = ["--model", str(stub_dynamic_dir), "--quiet", "--no-eval", "--no-report", "--no-gif", "--no-png"]
    assert main(["segment", str(tiny_v2_path.parent), "--out", str(tmp_path / "one"), *args]) == 0
    assert (tmp_path / "one" / TINY_SEGMENT / "manifest.json").is_file()
    several = tmp_path / "split" / "camera_image"
    several.mkdir(parents=True)
    for name in ("a_0000000000000000_000_000_000_000", "b_0000000000000000_000_000_000_000"):
        shutil.copy(tiny_v2_path, several / f"{name}.parquet")
    out, err = io.StringIO(), io.StringIO()
    assert main(["segment", str(several), "--out", str(tmp_path / "two"), *args], stdout=out, stderr=err) == 2
    assert (out.getvalue(), err.getvalue()) == ("", f"detect: error: {several}: holds 2 segment files; give one file, "
                                                    "or use `detect run` for many\n")
