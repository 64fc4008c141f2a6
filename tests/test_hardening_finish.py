"""Crafted results folders and runs through the CLI, end to end. Each ends with correct output or a
one-line note naming what was left out, never "unexpected", never a hang."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import run_cli
from helpers.paths import TINY_SEGMENT
from PIL import Image

from detect.cli.exit_codes import EXIT_FRAMES_FAILED
from detect.results.table import DETECTIONS_FILE
from detect.waymo.schema import SEGMENT

# Each stub model is loaded once for the file's runs (tests/conftest.py): these tests are about what a run
# writes or refuses, not about loading.
pytestmark = pytest.mark.usefixtures("load_each_model_once")


def run_args(segment: Path, model: Path, out: Path, *extra: str) -> list[str]:
    return ["run", str(segment), "--model", str(model), "--out", str(out), "--no-eval", "--no-report",
            "--no-gif", "--quiet", *extra]


@pytest.fixture
def results(tiny_v2_path, stub_dynamic_dir, tmp_path) -> Path:
    out = tmp_path / "results"
    assert run_cli(run_args(tiny_v2_path, stub_dynamic_dir, out))[0] == 0
    return out


def foreign_rows(segment_dir: Path, count: int = 2) -> int:
    """Rename the segment of the first `count` detections rows; how many rows the table has."""
    path = segment_dir / DETECTIONS_FILE
    table = pq.read_table(path)
    assert len(table) > count
    names = table.column(SEGMENT).to_pylist()
    names[:count] = ["another_segment_0000"] * count
    table = table.set_column(table.schema.get_field_index(SEGMENT), SEGMENT,
                             pa.array(names, table.schema.field(SEGMENT).type))
    pq.write_table(table, path)
    return len(table)


def test_compare_leaves_out_rows_naming_another_segment(results, tmp_path):
    rows = foreign_rows(results / TINY_SEGMENT)
    out_dir = tmp_path / "c"
    code, out, err = run_cli(["compare", str(results), str(results), "--out", str(out_dir), "--bootstrap", "10"])
    assert code == 0, err
    note = (f"{results / TINY_SEGMENT / DETECTIONS_FILE}: 2 row(s) name another segment than {TINY_SEGMENT}; "
            f"left out")
    assert f"detect: note: A: {note}\n" in err
    assert f"detect: note: B: {note}\n" in err
    assert "unexpected" not in out + err
    report = json.loads((out_dir / "compare.json").read_text())
    assert (out_dir / "compare.html").is_file()
    assert "another_segment_0000" not in json.dumps(report)
    assert rows > 2


def test_eval_leaves_out_rows_naming_another_segment(results):
    foreign_rows(results / TINY_SEGMENT)
    code, out, err = run_cli(["eval", str(results)])
    assert code == 0, err
    note = (f"{results / TINY_SEGMENT / DETECTIONS_FILE}: 2 row(s) name another segment than {TINY_SEGMENT}; "
            f"left out")
    assert f"detect: note: {note}\n" in err
    assert "unexpected" not in out + err
    evaluation = json.loads((results / "eval.json").read_text())
    assert "another_segment_0000" not in json.dumps(evaluation)
    assert (results / "matches.parquet").is_file()
    matches = pq.read_table(results / "matches.parquet")
    assert set(matches.column(SEGMENT).to_pylist()) <= {TINY_SEGMENT}



def test_the_report_counts_the_boxes_eval_counts_leaving_out_rows_naming_another_segment(results):
    """One view of a segment folder: the page leaves out the rows eval leaves out, and says so."""
    from detect.report.data import load

    segment_dir = results / TINY_SEGMENT
    rows = pq.read_table(segment_dir / DETECTIONS_FILE).num_rows
    foreign_rows(segment_dir)
    data = load(segment_dir)
    assert len(data.detections) == rows - 2 and set(data.detections["camera"]) <= {"FRONT", "FRONT_LEFT", "FRONT_RIGHT",
                                                                                  "SIDE_LEFT", "SIDE_RIGHT"}
    note = f"{segment_dir / DETECTIONS_FILE}: 2 row(s) name another segment than {TINY_SEGMENT}; left out"
    assert note in data.notes
    code, _, err = run_cli(["report", str(results)])
    assert code == 0 and f"detect: note: {note}\n" in err, err

# A run of two segments, one with a hostile manifest.json ------------------------------------------

HOSTILE_MANIFESTS = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "nan": '{"segment_context_name": "broken_segment", "timings": {"images_per_second": NaN}}',
}


@pytest.fixture(params=sorted(HOSTILE_MANIFESTS))
def broken_run(request, results) -> tuple[Path, Path]:
    """The run, plus a copy of its segment whose manifest.json is hostile: (run, that segment)."""
    import shutil

    broken = results / "broken_segment"
    shutil.copytree(results / TINY_SEGMENT, broken)
    (broken / "manifest.json").write_text(HOSTILE_MANIFESTS[request.param])
    return results, broken


def test_compare_eval_report_leave_out_a_segment_whose_manifest_is_hostile(broken_run, tmp_path):
    run, broken = broken_run
    for argv, written in ((["eval", str(run)], run / "eval.json"),
                          (["compare", str(run), str(run), "--out", str(tmp_path / "c"), "--bootstrap", "10"],
                           tmp_path / "c" / "compare.html"),
                          (["report", str(run)], run / TINY_SEGMENT / "report.html")):
        code, out, err = run_cli(argv)
        assert code == 0, (argv[0], err)  # the rest is written: a left-out segment is a note, not a failure
        assert "unexpected" not in out + err
        assert [line for line in err.splitlines() if str(broken / "manifest.json") in line][0].endswith("; left out")
        assert written.is_file(), argv[0]
    assert not (broken / "report.html").exists()
    # `detect gif` needs no manifest (its frames are good): the caption falls back to the folder's name
    code, out, err = run_cli(["gif", str(run)])
    assert (code, err) == (0, "")
    assert (run / TINY_SEGMENT / "FRONT.gif").is_file() and (broken / "FRONT.gif").is_file()


# A frame that is a FIFO ----------------------------------------------------------------------------

def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "detect.cli", *argv], capture_output=True, text=True, timeout=120,
                          env=env, check=False)


@pytest.fixture
def fifo_frame(results) -> Path:
    frame = sorted((results / TINY_SEGMENT / "frames" / "FRONT").glob("*.png"))[1]
    frame.unlink()
    os.mkfifo(frame)
    return frame


def test_gif_leaves_a_fifo_frame_out_with_a_note_and_writes_the_rest(results, fifo_frame):
    done = _cli("gif", str(results))  # a hang fails here on the timeout, never blocks the suite
    assert "unexpected" not in done.stderr
    assert f"detect: note: {fifo_frame} " in done.stderr
    assert "frame left out of the animations" in done.stderr
    assert done.returncode == EXIT_FRAMES_FAILED  # `detect gif`'s exit code when something was left out
    gifs = sorted(p.name for p in (results / TINY_SEGMENT).glob("*.gif"))
    assert "FRONT.gif" in gifs
    frames = len(list((results / TINY_SEGMENT / "frames" / "FRONT").glob("*.png")))
    with Image.open(results / TINY_SEGMENT / "FRONT.gif") as im:
        assert im.n_frames == frames - 1


@pytest.mark.slow  # eval and report, each in a process of its own, over FIFO frames
def test_report_finishes_with_fifo_frames_and_notes_the_pictures_it_left_out(results):
    assert _cli("eval", str(results)).returncode == 0
    fifos = sorted((results / TINY_SEGMENT / "frames").rglob("*.png"))
    for frame in fifos:  # every frame: the thumbnails and the gallery's crops each meet one
        frame.unlink()
        os.mkfifo(frame)
    done = _cli("report", str(results))
    assert done.returncode == 0, done.stderr
    assert "unexpected" not in done.stderr
    assert (results / TINY_SEGMENT / "report.html").is_file()
    notes = [line for line in done.stderr.splitlines() if line.endswith("; left out of the report's pictures")]
    assert notes
    assert all(line.startswith("detect: note: ") and any(str(f) in line for f in fifos) for line in notes)
    assert len(notes) == len(set(notes))  # once per frame, however many pictures it was for


# Two frames 1,000 s apart ---------------------------------------------------------------------------

def test_segment_with_two_frames_a_thousand_seconds_apart_finishes_with_clamped_delays(stub_dynamic_dir, tmp_path):
    from detect.core.records import CameraFrame
    from detect.results.gif import MAX_DELAY_CS
    from detect.tools.synthetic import write_camera_image_parquet

    def jpeg(color: tuple[int, int, int]) -> bytes:
        out = io.BytesIO()
        Image.new("RGB", (96, 64), color).save(out, "JPEG")
        return out.getvalue()

    t0 = 1_600_000_000_000_000
    stamps = (t0, t0 + 1_000_000_000)  # 1,000 s: 100,000 cs, beyond GIF's uint16 delay
    frames = [CameraFrame("gap_segment", ts, camera, jpeg((40 * i, 80, 40 * camera)))
              for i, ts in enumerate(stamps) for camera in (1, 2)]  # two cameras: the mosaic too
    source = write_camera_image_parquet(tmp_path / "in" / "gap_segment.parquet", frames)
    out = tmp_path / "out"
    code, stdout, err = run_cli(["segment", str(source), "--model", str(stub_dynamic_dir), "--out", str(out),
                                 "--quiet"])
    assert code == 0, err
    assert "unexpected" not in stdout + err
    directory = out / "gap_segment"
    gifs = sorted(p.name for p in directory.glob("*.gif"))
    assert gifs == ["FRONT.gif", "FRONT_LEFT.gif", "mosaic.gif"]
    for name in gifs:
        with Image.open(directory / name) as im:
            assert im.n_frames == 2
            im.seek(0)
            assert im.info["duration"] == MAX_DELAY_CS * 10
