"""Track ids in a run's detections.parquet: written at the end of a segment, the same after a resume
and after `detect track`, absent with --no-track, and `detect track`'s errors in one line."""

from __future__ import annotations

import io
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import without_status
from helpers.paths import TINY_SEGMENT

from detect.cli import main
from detect.cli.console import relative, wrap


def segment(tiny_v2_path, model, out, *flags) -> int:
    return main(["segment", str(tiny_v2_path), "--model", str(model), "--out", str(out), "--quiet", "--no-eval",
                 "--no-report", "--no-gif", *flags])


def ids_of(seg):
    table = pq.read_table(seg / "detections.parquet")
    return table, np.array([-1 if v is None else v for v in table.column("track_id").to_pylist()])


@pytest.fixture(scope="module")
def tracked_once(tiny_v2_path, stub_dynamic_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("tracked") / "out"
    assert segment(tiny_v2_path, stub_dynamic_dir, out) == 0
    return out / TINY_SEGMENT


@pytest.fixture
def tracked(tracked_once, tmp_path):
    """A fresh copy of one tracked run for each test (it may damage or rewrite it)."""
    return shutil.copytree(tracked_once, tmp_path / "out" / TINY_SEGMENT)


def test_each_fixed_box_keeps_one_id_per_camera_and_ids_are_unique_in_the_segment(tracked):
    table, ids = ids_of(tracked)
    assert table.schema.field("track_id").type == pa.int64() and table.column_names[-1] == "track_id"
    kept = ids >= 0
    assert kept.any()
    cams = table.column("key.camera_name").to_numpy()
    boxes = np.stack([table.column(c).to_numpy() for c in ("xmin", "ymin", "xmax", "ymax")], 1)
    for track in np.unique(ids[kept]):  # one camera, one box (the stub's boxes stand still)
        rows = ids == track
        assert len(np.unique(cams[rows])) == 1 and len(np.unique(boxes[rows], axis=0)) == 1
    per_object = {(int(c), *map(float, b)) for c, b, k in zip(cams, boxes, kept, strict=True) if k}
    assert len(per_object) == len(np.unique(ids[kept]))
    manifest = json.loads((tracked / "manifest.json").read_text())
    assert manifest["tracking"]["tracks"] == len(np.unique(ids[kept]))
    assert manifest["tracking"]["params"]["high_score"] == manifest["settings"]["draw"]["threshold"]


def test_no_track_leaves_the_column_null_and_says_so(tiny_v2_path, stub_dynamic_dir, tmp_path):
    assert segment(tiny_v2_path, stub_dynamic_dir, tmp_path, "--no-track") == 0
    table, ids = ids_of(tmp_path / TINY_SEGMENT)
    assert table.column("track_id").null_count == table.num_rows
    assert json.loads((tmp_path / TINY_SEGMENT / "manifest.json").read_text())["tracking"] is None


def test_a_resumed_segment_gets_the_ids_of_an_uninterrupted_run(tiny_v2_path, stub_dynamic_dir, tracked):
    _, before = ids_of(tracked)
    for name in ("detections.parquet", "manifest.json"):  # as if it had stopped after its last frame
        (tracked / name).unlink()
    assert segment(tiny_v2_path, stub_dynamic_dir, tracked.parent, "--resume") == 0
    np.testing.assert_array_equal(ids_of(tracked)[1], before)


@pytest.mark.slow
def test_detect_track_gives_the_runs_ids_again_and_follows_its_threshold(tracked, capsys):
    _, before = ids_of(tracked)
    assert main(["track", str(tracked)]) == 0
    out, err = capsys.readouterr()
    err = without_status(err)
    assert out.startswith(f"{TINY_SEGMENT}: ") and "track(s) over" in out
    assert err.splitlines()[0] == (f"detect: note: frames and animations drawn before show the old track ids; `detect "
                                   f"redraw {tracked}` draws the new ones; tables and eval read them now")
    np.testing.assert_array_equal(ids_of(tracked)[1], before)
    assert main(["track", str(tracked), "--threshold", "0.99"]) == 0  # nothing scores that high: no track
    assert (ids_of(tracked)[1] == -1).all()
    assert json.loads((tracked / "manifest.json").read_text())["tracking"]["tracks"] == 0


def tracking_line(directory) -> str:
    """The line `detect segment`, `run` and `track` print of an eval.json's tracking scores."""
    scores = json.loads((directory / "eval.json").read_text())["tracking_level_2"]
    assert scores  # the tiny fixture's labels carry object ids
    return ("tracking HOTA / MOTA / IDF1 (IoU 0.5): "
            + ", ".join(f"{name} {s['hota']:.3f} / {s['mota']:.3f} / {s['idf1']:.3f}" for name, s in scores.items()))


@pytest.mark.slow
def test_detect_track_scores_the_new_ids_and_writes_the_pages_that_show_them_again(tracked, capsys):
    """The tracks are scored against the labels' object ids (an evaluation again: the table changed)
    and the page that exists is written again: none is older than the eval.json it shows."""
    assert main(["report", str(tracked)]) == 0
    capsys.readouterr()
    assert main(["track", str(tracked)]) == 0
    out = capsys.readouterr().out.splitlines()
    _, ids = ids_of(tracked)
    assert out == [f"{TINY_SEGMENT}: {len(np.unique(ids[ids >= 0]))} track(s) over {(ids >= 0).sum()} of {len(ids)} "
                   "boxes", *wrap(relative(tracking_line(tracked))), *wrap(f"report: {relative(str(tracked))}/report.html")]
    page, evaluation = (tracked / name for name in ("report.html", "eval.json"))
    assert page.stat().st_mtime_ns >= evaluation.stat().st_mtime_ns
    assert "tracking.parquet" in os.listdir(tracked)


def test_detect_track_says_when_the_labels_carry_no_object_ids(tracked, capsys):
    path = tracked / "ground_truth.parquet"
    table = pq.read_table(path)
    index = table.schema.get_field_index("key.camera_object_id")
    pq.write_table(table.set_column(index, "key.camera_object_id", pa.nulls(table.num_rows, pa.string())), path)
    assert main(["track", str(tracked)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["tracks not scored: the labels carry no object ids"]


def test_a_tracked_segment_with_labels_prints_its_tracking_scores(tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    """`detect segment` on a labelled video ends with the tracks' HOTA, MOTA and IDF1 (eval computes them)."""
    assert main(["segment", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(tmp_path), "--no-report",
                 "--no-gif", "--no-png"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == wrap(tracking_line(tmp_path / TINY_SEGMENT))


@pytest.mark.slow
def test_a_run_prints_its_tracking_line_and_detect_track_leaves_no_page_older_than_an_eval_json(
        tiny_v2_path, stub_dynamic_dir, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", str(tiny_v2_path), "--model", str(stub_dynamic_dir), "--out", str(run), "--no-gif",
                 "--no-png"]) == 0
    assert wrap(tracking_line(run)) == capsys.readouterr().out.splitlines()[-3:-1]  # then the report's line
    assert main(["track", str(run), "--lost-seconds", "0.1"]) == 0
    assert capsys.readouterr().out.splitlines()[-3:] == [*wrap(tracking_line(run)), f"report: {relative(str(run))}/index.html"]
    pages = [run / "index.html", run / TINY_SEGMENT / "report.html"]
    evaluations = [run / "eval.json", run / TINY_SEGMENT / "eval.json"]
    assert min(p.stat().st_mtime_ns for p in pages) >= max(e.stat().st_mtime_ns for e in evaluations)


@pytest.mark.slow
def test_detect_eval_writes_the_existing_pages_again_and_no_other(tracked, capsys):
    assert main(["eval", str(tracked), "--quiet"]) == 0
    assert not (tracked / "report.html").exists()  # no page before: none written
    assert main(["report", str(tracked)]) == 0
    capsys.readouterr()
    assert main(["eval", str(tracked)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"report: {relative(str(tracked))}/report.html"
    assert (tracked / "report.html").stat().st_mtime_ns >= (tracked / "eval.json").stat().st_mtime_ns
    assert main(["eval", str(tracked.parent)]) == 0  # the folder `detect segment --out` wrote into
    assert capsys.readouterr().out.splitlines()[-1] == f"report: {relative(str(tracked))}/report.html"
    assert (tracked / "report.html").stat().st_mtime_ns >= (tracked / "eval.json").stat().st_mtime_ns
    assert not (tracked.parent / "index.html").exists()  # no page added


def test_detect_track_adds_the_column_to_a_table_written_before_tracking(tracked):
    _, before = ids_of(tracked)
    path = tracked / "detections.parquet"
    pq.write_table(pq.read_table(path).drop(["track_id"]), path)
    assert main(["track", str(tracked)]) == 0
    np.testing.assert_array_equal(ids_of(tracked)[1], before)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: p.write_bytes(b"not parquet"), "not a readable detections table"),
    (lambda p: pq.write_table(pa.table({"x": [1]}), p), "not a detections table (no key.segment_context_name"),
])
def test_detect_track_on_a_broken_table_is_one_line_naming_it(tracked, damage, message):
    damage(tracked / "detections.parquet")
    err = io.StringIO()
    assert main(["track", str(tracked)], stderr=err) == 2
    assert without_status(err.getvalue()).startswith(f"detect: error: {tracked / 'detections.parquet'}: {message}")
    assert len(without_status(err.getvalue()).splitlines()) == 1


def test_detect_track_leaves_out_a_segment_another_process_holds(tracked, tmp_path):
    from detect.results.layout import SegmentLock

    other = tmp_path / "out" / "copy"
    shutil.copytree(tracked, other)
    lock = SegmentLock(other)
    try:
        err = io.StringIO()
        assert main(["track", str(tmp_path / "out")], stderr=err) == 1
        assert "left out" in err.getvalue() and str(other) in err.getvalue()
    finally:
        lock.release()


def test_bad_tracker_flags_are_usage_errors(tracked, capsys):
    assert main(["track", str(tracked), "--lost-seconds", "nan"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "detect track: error: argument --lost-seconds: not a finite number: 'nan'"


def test_the_pool_scores_sequences_added_one_at_a_time_as_trackeval_scores_them_all():
    from detect.core.matching import WAYMO_PROTOCOL
    from detect.track import TrackEvalFrame, TrackingPool, score_tracks

    rng = np.random.default_rng(7)

    def sequence(n_frames: int, objects: int) -> list[TrackEvalFrame]:
        frames = []
        for f in range(n_frames):
            xy = rng.uniform(0, 500, (objects, 2)) + f
            boxes = np.concatenate([xy, xy + 40], 1)
            keep = rng.random(objects) < 0.8
            frames.append(TrackEvalFrame(tuple(f"o{i}" for i in range(objects)), boxes,
                                      np.flatnonzero(keep) + 100 * (f // 4), boxes[keep] + rng.normal(0, 3, (keep.sum(), 4))))
        return frames

    sequences = {1: [sequence(6, 5), sequence(4, 3)], 2: [sequence(5, 4)]}
    pool = TrackingPool(WAYMO_PROTOCOL)
    for waymo_type, seqs in sequences.items():
        for frames in seqs:
            pool.add(waymo_type, frames)
    assert pool.scores() == score_tracks(sequences, WAYMO_PROTOCOL)
    merged, part = TrackingPool(WAYMO_PROTOCOL), TrackingPool(WAYMO_PROTOCOL)  # a segment's pool, then the run's
    merged.add(1, sequences[1][0])
    part.add(1, sequences[1][1])
    part.add(2, sequences[2][0])
    merged.merge(part)
    assert merged.scores() == pool.scores()


def test_eval_scores_the_tracks_against_the_labels_object_ids_as_trackeval_does(tracked):
    from detect.core.matching import COCO_PROTOCOL
    from detect.core.records import WaymoType
    from detect.evaluate.segment_results import load_segment
    from detect.evaluate.tracking import segment_sequences
    from detect.model.classmap import default_class_map
    from detect.track import score_tracks

    assert main(["eval", str(tracked), "--quiet"]) == 0
    report = json.loads((tracked / "eval.json").read_text())["tracking_level_2"]
    segment = load_segment(tracked)
    sequences: dict[int, list] = {}
    for sequence in segment_sequences(segment, default_class_map(), [1, 2, 3, 4]):
        sequences.setdefault(sequence.waymo_type, []).append(sequence.frames)
    expected = {WaymoType(t).name: s.to_json() for t, s in score_tracks(sequences, COCO_PROTOCOL).items()
                if s.label_boxes}
    assert report == expected and report  # the tiny fixture's labels carry object ids
    for name, scores in report.items():
        assert 0 <= scores["hota"] <= 1 and scores["label_boxes"] > 0, name
    # tracking.parquet: every tracked box of a labeled type, its flags summing to eval.json's counts
    table = pq.read_table(tracked / "tracking.parquet").to_pandas()
    _, ids = ids_of(tracked)
    assert set(table["track_id"]) <= set(ids[ids >= 0].tolist()) and len(table) > 0
    for name, scores in report.items():
        rows = table[table["type_name"] == name]
        assert (int(rows["id_switch"].sum()), int(rows["fragmentation"].sum())) == (
            scores["id_switches"], scores["fragmentations"])
        assert rows["key.camera_object_id"].notna().sum() == rows["iou"].notna().sum()


def test_eval_of_an_untracked_run_removes_an_earlier_tracking_parquet(tracked):
    assert main(["eval", str(tracked), "--quiet"]) == 0
    assert (tracked / "tracking.parquet").is_file()
    table = pq.read_table(tracked / "detections.parquet")
    nulls = pa.nulls(len(table), pa.int64())
    pq.write_table(table.set_column(table.column_names.index("track_id"), "track_id", nulls), tracked / "detections.parquet")
    assert main(["eval", str(tracked), "--quiet"]) == 0
    assert not (tracked / "tracking.parquet").exists()
    assert "tracking_level_2" not in json.loads((tracked / "eval.json").read_text())


def test_without_trackeval_eval_says_how_to_install_it_in_one_line(tracked, monkeypatch):
    import sys

    from detect.track import scoring

    monkeypatch.setitem(sys.modules, "trackeval", None)  # `import trackeval` now raises ImportError
    monkeypatch.setitem(sys.modules, "trackeval.metrics", None)
    scoring.trackeval_metrics.cache_clear()
    try:
        err = io.StringIO()
        assert main(["eval", str(tracked)], stderr=err) == 2
        assert err.getvalue().strip().splitlines()[-1] == f"detect: error: {scoring.TRACKEVAL_MISSING}"
    finally:
        scoring.trackeval_metrics.cache_clear()
