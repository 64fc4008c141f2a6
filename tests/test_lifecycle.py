"""The segment lifecycle and the local engine, driven by a numpy fake detector (no SavedModel, no
model load): resume, refusal, failed frames, the journal, and the exact lines a run prints."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers.paths import TINY_SEGMENT

from detect.core.cameras import CameraName
from detect.core.errors import OutputError, UsageError
from detect.core.records import Detections, FrameFailure, FrameKey, FrameResult, WaymoType
from detect.engine.events import Collect
from detect.engine.lifecycle import SegmentLifecycle
from detect.engine.local import process_segment
from detect.engine.outcomes import SegmentOutcome, SegmentReport, Status, outcome_of
from detect.engine.spec import ResumeModel, RunSpec, SegmentJob, SegmentSettings, SettingsRecord
from detect.engine.summary import failure_lines, format_table, summary_line
from detect.model.facts import ModelFacts
from detect.results import journal
from detect.waymo.readers import read_keys
from detect.waymo.sources import resolve_one

FACTS = ModelFacts.from_json({"path": "/models/fake", "threshold": 0.5, "classes": None, "batch_size": 4})


class FakeDetector:
    """One box per image, class 3 (car); a batch holding an image `fail_heights` high fails whole."""

    batch_size = 4

    def __init__(self, fail_heights: tuple[int, ...] = ()) -> None:
        self.fail_heights = fail_heights
        self.calls = 0

    def __call__(self, images: np.ndarray, sizes=None) -> list[Detections]:
        self.calls += 1
        out = []
        for width, height in sizes:
            if height in self.fail_heights:
                raise RuntimeError(f"cannot run on {height} high images")
            box = np.array([[width / 4, height / 4, width / 2, height / 2]], np.float32)
            out.append(Detections(box, np.array([0.9], np.float32), np.array([3], np.int32), ("car",)))
        return out


class Clock:
    """0 s at the first call (the segment's start), 2 s ever after: the segment takes exactly 2 s."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return 0.0 if self.calls == 1 else 2.0


def run(tiny_v2_path: Path, out: Path, detector=None, clock=None, **settings) -> SegmentReport:
    settings.setdefault("gif", False)
    return process_segment(resolve_one(str(tiny_v2_path)), out, detector or FakeDetector(),
                           SegmentSettings(**settings), model_facts=FACTS, clock=clock or Clock())


@pytest.mark.slow
def test_a_segment_writes_frames_table_manifest_and_journal(tiny_v2_path, tmp_path):
    report = run(tiny_v2_path, tmp_path, gif=True)
    directory = tmp_path / TINY_SEGMENT
    assert (report.images_planned, report.images_processed, report.detections, report.failures) == (15, 15, 15, ())
    assert len(list((directory / "frames").rglob("*.png"))) == 15
    assert (directory / "mosaic.gif").is_file()
    assert pq.read_table(directory / "detections.parquet").num_rows == 15
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["engine"]["name"] == "local"
    assert manifest["engine"]["render"] in ("threads", "processes")
    assert len(journal.journal_path(directory).read_text().splitlines()) == 15
    assert not (directory / ".detect" / "lock").read_text() == ""  # the pid of the last writer


@pytest.mark.slow
def test_resume_after_a_kill_mid_line_redoes_only_the_missing_frames(tiny_v2_path, tmp_path):
    whole = run(tiny_v2_path, tmp_path / "whole")
    run(tiny_v2_path, tmp_path / "cut")
    directory = tmp_path / "cut" / TINY_SEGMENT
    path = journal.journal_path(directory)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:7]) + '{"t": 16000')  # killed mid-line
    (directory / "manifest.json").unlink()
    detector = FakeDetector()
    report = run(tiny_v2_path, tmp_path / "cut", detector, mode="resume")
    assert (report.images_resumed, report.images_processed) == (7, 8)
    assert detector.calls == 2  # 8 images in batches of 4
    assert len(path.read_text().splitlines()) == 15 and path.read_text().endswith("\n")  # torn line truncated
    assert pq.read_table(directory / "detections.parquet").equals(
        pq.read_table(tmp_path / "whole" / TINY_SEGMENT / "detections.parquet"))
    assert whole.detections == report.detections


def test_resume_of_a_complete_segment_does_nothing(tiny_v2_path, tmp_path):
    run(tiny_v2_path, tmp_path)
    detector = FakeDetector()
    report = run(tiny_v2_path, tmp_path, detector, mode="resume")
    assert report.already_complete and detector.calls == 0
    assert summary_line(report) == f"{TINY_SEGMENT}: already complete in {tmp_path / TINY_SEGMENT} (nothing to do)"
    assert outcome_of("in.parquet", report) == SegmentOutcome("in.parquet", TINY_SEGMENT, Status.SKIPPED,
                                                              detections=15, error="already complete",
                                                              drawn=15)  # the manifest's count, as the pages show


def test_an_existing_directory_is_refused_without_resume_or_overwrite(tiny_v2_path, tmp_path):
    run(tiny_v2_path, tmp_path)
    with pytest.raises(OutputError, match=re.escape(f"{tmp_path / TINY_SEGMENT} already exists; pass --resume to "
                                                    f"continue it or --overwrite to replace it")):
        run(tiny_v2_path, tmp_path)


def test_resume_with_other_settings_is_refused_naming_the_differences(tiny_v2_path, tmp_path):
    run(tiny_v2_path, tmp_path)
    with pytest.raises(UsageError) as refused:
        run(tiny_v2_path, tmp_path, mode="resume", frame_format="jpg")
    assert str(refused.value) == (f"{tmp_path / TINY_SEGMENT} was written with other settings (frame_format 'png' -> "
                                  f"'jpg'); use --overwrite to start again")


def test_a_failing_batch_is_retried_image_by_image_and_only_the_bad_images_fail(tiny_v2_path, tmp_path):
    report = run(tiny_v2_path, tmp_path, FakeDetector(fail_heights=(44,)), input_size=None)  # SIDE cameras: 96x44
    assert report.images_processed == 9 and len(report.failures) == 6
    assert {(f.key.camera_name.name, f.stage, f.error) for f in report.failures} == {
        (camera, "detect", "RuntimeError: cannot run on 44 high images") for camera in ("SIDE_LEFT", "SIDE_RIGHT")}
    lines = failure_lines(report)
    assert lines[0] == f"  failed {report.failures[0].key}: detect: RuntimeError: cannot run on 44 high images"
    assert lines[-1] == f"  ... and 1 more in {tmp_path / TINY_SEGMENT / 'manifest.json'}" and len(lines) == 6
    manifest = json.loads((tmp_path / TINY_SEGMENT / "manifest.json").read_text())
    assert manifest["status"] == "complete_with_failures" and manifest["counts"]["images_failed"] == 6
    assert pq.read_table(tmp_path / TINY_SEGMENT / "detections.parquet").num_rows == 9


def test_the_summary_line_is_exact_with_an_injected_clock(tiny_v2_path, tmp_path):
    report = run(tiny_v2_path, tmp_path, clock=Clock())
    assert report.seconds == 2.0
    assert summary_line(report) == f"{TINY_SEGMENT}: 15 images, 15 detections, 7.5 images/s -> {tmp_path / TINY_SEGMENT}"
    assert summary_line(report, "stub").endswith(" [stub model]")
    import dataclasses

    low_scores = dataclasses.replace(report, detections=14, drawn=3)  # the table keeps boxes below the threshold too
    assert summary_line(low_scores, model="model: m") == (
        f"{TINY_SEGMENT}: 15 images, 3 boxes drawn (at or above the threshold); 14 kept in the table (low scores too, "
        f"for evaluation), 7.5 images/s -> {tmp_path / TINY_SEGMENT} "
        f"(model: m)")


def test_the_run_table_is_exact():
    outcomes = [
        SegmentOutcome("a.parquet", "seg_a", Status.DONE, 10, 30, 0, 2.0, drawn=12),
        SegmentOutcome("b.parquet", None, Status.FAILED, error="b.parquet: not a readable Parquet file"),
        SegmentOutcome("c.tfrecord", "seg_c", Status.SKIPPED, error="already complete"),
    ]
    # The boxes drawn (at the threshold), as the pages count them; not every box the table keeps (30).
    assert format_table(outcomes, 4.0) == [
        "segment    status              images      drawn   img/s",
        "seg_a      done                    10         12     5.0",
        "b.parquet  failed                   0          -       -",
        "           b.parquet: not a readable Parquet file",
        "seg_c      skipped                  0          -       -",
        "           already complete",
        "3 segments: 1 done, 0 with failed frames, 1 skipped, 1 failed; 10 images in 4.0 s (2.5 images/s)",
    ]
    assert format_table(outcomes[:1], 4.0)[-1] == "1 segment: 1 done, 0 with failed frames, 0 skipped, 0 failed; " \
        "10 images in 4.0 s (2.5 images/s)"
    one = [dataclasses.replace(outcomes[0], images=1)]
    assert format_table(one, 1.0)[-1].endswith("; 1 image in 1.0 s (1.0 images/s)")


def test_the_journal_round_trips_a_result_exactly(tmp_path):
    key = FrameKey("seg", 1_600_000_000_000_000, CameraName.SIDE_LEFT)
    detections = Detections(np.array([[1.5, 2.25, 30.125, 40.0]], np.float32), np.array([0.123456789], np.float32),
                            np.array([3], np.int32), ("car",), invalid=2)
    result = FrameResult(key, 1920, 886, detections)
    back = journal.decode(journal.encode(result), "seg")
    assert back.key == key and (back.width, back.height) == (1920, 886)
    assert back.detections.equals(detections, atol=0) and back.detections.invalid == 2
    assert '"x"' not in journal.encode(FrameResult(key, 1, 1, Detections.empty()))  # older journals read the same


def test_an_unchanged_journal_is_parsed_once_and_a_changed_one_again(tmp_path, monkeypatch):
    segment_dir = tmp_path / "seg"
    frames = [FrameResult(FrameKey("seg", 1_000_000 * t, CameraName.FRONT), 96, 64,
                          Detections(np.array([[1, 2, 30, 40]], np.float32), np.array([0.5], np.float32),
                                     np.array([3], np.int32), ("car",))) for t in (1, 2)]
    with journal.Journal(segment_dir) as log:
        log.append(frames[0])
    parsed = []
    monkeypatch.setattr(journal, "decode", lambda line, segment: _decode(line, segment, parsed))
    first, intact = journal.load(segment_dir, "seg")
    second, again = journal.load(segment_dir, "seg")
    assert len(parsed) == 1 and first == second and intact == again and first is not second  # each caller's own dict
    second.clear()
    assert list(journal.load(segment_dir, "seg")[0]) == [frames[0].key]  # a caller's change stays its own
    assert not next(iter(first.values())).detections.scores.flags.writeable  # shared arrays cannot be changed
    with journal.Journal(segment_dir, intact) as log:
        log.append(frames[1])  # the file changed: parsed again
    assert list(journal.load(segment_dir, "seg")[0]) == [f.key for f in frames] and len(parsed) == 3
    assert list(journal.load(segment_dir, "other")[0])[0].segment_context_name == "other"  # another segment's reading


_real_decode = journal.decode


def _decode(line: str, segment: str, parsed: list[str]) -> FrameResult:
    parsed.append(line)
    return _real_decode(line, segment)


ALL_TYPES = frozenset(int(t) for t in WaymoType)


def test_the_lifecycle_refuses_to_record_when_nothing_was_pending(tiny_v2_path, tmp_path):
    run(tiny_v2_path, tmp_path)
    (tmp_path / TINY_SEGMENT / "manifest.json").unlink()
    job = SegmentJob.judged(SegmentSettings(gif=False, mode="resume"), ALL_TYPES, None)  # as the engine judged its frames
    lifecycle = SegmentLifecycle.open(read_keys(str(tiny_v2_path)), tmp_path, job, FACTS)
    assert isinstance(lifecycle, SegmentLifecycle) and lifecycle.pending == []
    key = lifecycle.planned[0]
    with pytest.raises(ValueError, match=f"^{TINY_SEGMENT}: no frame was pending, nothing to record$"):
        lifecycle.record(FrameResult(key, 96, 64, Detections.empty()))
    lifecycle.record(FrameFailure(key, "render", "disk full"))
    report = lifecycle.finish(loop_seconds=0.0, engine={"name": "test"})
    assert report.images_resumed == 15 and [f.error for f in report.failures] == ["disk full"]


def recorded_errors(job: SegmentJob) -> object:
    """How the manifest records the way a job's frames are judged."""
    return SettingsRecord.of(job).to_json()["errors"]


def test_what_the_engine_derives_is_beside_the_settings_not_in_them():
    settings = SegmentSettings()
    assert "errors" not in {f.name for f in dataclasses.fields(SegmentSettings)}
    model = ResumeModel("/models/fake", 0.05, None, None)
    assert "errors" not in settings.resume_key(model, "seg")  # known before an input is opened
    judged = SegmentJob.judged(settings, ALL_TYPES, None)
    assert judged.settings is settings and judged.rules is not None
    assert judged.resume_key(model, "seg") == settings.resume_key(model, "seg") | {
        "errors": "coco protocol, default COCO -> Waymo map"}
    assert list(judged.resume_key(model, "seg"))[-1] == "errors"  # settings.json's key order is kept
    assert recorded_errors(judged) == {"protocol": "coco", "class_map": "default COCO -> Waymo map",
                                       "types": ["VEHICLE", "PEDESTRIAN", "SIGN", "CYCLIST"]}
    for job in (SegmentJob.judged(settings, None, None),  # no labels
                SegmentJob.judged(dataclasses.replace(settings, draw_mode="detections"), ALL_TYPES, None),
                SegmentJob.judged(settings, ALL_TYPES, (0,)),  # a model whose class maps to no Waymo type
                SegmentJob.judged(settings, {int(WaymoType.SIGN)}, (1, 2, 3))):  # labels of none of its types
        # not judged: the protocol and the map are still recorded (the evaluation and the tracker use them)
        assert job.rules is None and recorded_errors(job) == {"protocol": "coco", "class_map": "default COCO -> Waymo map",
                                                               "types": []}
        assert job.resume_key(model, "seg")["errors"] is None


def test_a_type_the_labels_lack_is_not_judged_in_the_frames():
    """Waymo's 2D labels have no SIGN: a stop sign is drawn as another class, not as a false alarm,
    as the evaluation leaves SIGN out; the same for Ray's one render job, kept per segment."""
    labelled = {int(WaymoType.VEHICLE), int(WaymoType.PEDESTRIAN), int(WaymoType.CYCLIST)}
    settings = SegmentSettings()
    job = SegmentJob.judged(settings, labelled, None)
    assert job.rules is not None and recorded_errors(job)["types"] == ["VEHICLE", "PEDESTRIAN", "CYCLIST"]
    every = SegmentJob.judged(settings, ALL_TYPES, None)
    assert every.for_label_types(labelled) == job
    assert recorded_errors(every.for_label_types({int(WaymoType.SIGN)}))["types"] == ["SIGN"]
    assert every.for_label_types(set()).rules is None


def test_a_run_spec_refuses_a_bad_shard_and_engine(tmp_path):
    with pytest.raises(UsageError, match=r"^--shard 4/4: need 0 <= I < N$"):
        RunSpec(inputs=("x",), out=tmp_path, shard=(4, 4))
    with pytest.raises(UsageError, match=r"^unknown engine 'spark': expected one of local, ray$"):
        RunSpec(inputs=("x",), out=tmp_path, engine="spark")  # type: ignore[arg-type]


def test_a_collecting_reporter_keeps_the_messages():
    reporter = Collect()
    reporter.message("note: one")
    assert reporter.messages == ["note: one"] and reporter.progress("x") is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"xyxy": np.zeros((2, 3))}, r"xyxy must have shape \(N, 4\), got \(2, 3\)"),
    ({"scores": np.zeros(3)}, r"scores must have shape \(1,\), got \(3,\)"),
    ({"class_ids": np.zeros(2)}, r"class_ids must have shape \(1,\), got \(2,\)"),
    ({"class_ids": np.array([1.5])}, r"class_ids must be whole numbers"),
    ({"labels": ()}, r"labels must have 1 entries, got 0"),
    ({"xyxy": np.array([[5.0, 0, 1, 1]])}, r"xyxy boxes must have xmin <= xmax and ymin <= ymax"),
    ({"invalid": -1}, r"invalid must be >= 0, got -1"),
    ({"track_ids": np.array([1, 2])}, r"track_ids must have shape \(1,\), got \(2,\)"),
    ({"track_ids": np.array([[1]])}, r"track_ids must have shape \(1,\), got \(1, 1\)"),
    ({"track_ids": np.array([1.0])}, r"track_ids must be integers, got dtype float64"),
    ({"track_ids": np.array([-2])}, r"track_ids must be >= -1 \(-1: no track\), got -2"),
])
def test_detections_say_what_is_wrong(kwargs, message):
    fields = {"xyxy": np.array([[0.0, 0, 1, 1]]), "scores": np.array([0.5]), "class_ids": np.array([1]),
              "labels": ("person",)} | kwargs
    with pytest.raises(ValueError, match=f"^{message}$"):
        Detections(**fields)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"xyxy": np.zeros((1, 5))}, r"label xyxy must have shape \(N, 4\), got \(1, 5\)"),
    ({"types": [1, 2]}, r"label types must have shape \(1,\), got \(2,\)"),
    ({"difficulty": []}, r"label difficulty must have shape \(1,\), got \(0,\)"),
    ({"object_ids": ()}, r"label object_ids must have 1 entries, got 0"),
])
def test_labels_say_what_is_wrong(kwargs, message):
    from detect.core.records import Labels

    fields = {"xyxy": np.zeros((1, 4)), "types": [2], "difficulty": [1], "object_ids": ("a",)} | kwargs
    with pytest.raises(ValueError, match=f"^{message}$"):
        Labels(**fields)


@pytest.mark.slow
def test_the_readme_python_example_runs(tiny_v2_path, stub_dynamic_dir, tmp_path):
    from detect import LocalEngine, ModelSpec, RunSpec, SegmentSettings, run_many

    spec = RunSpec(inputs=(str(tiny_v2_path.parent),), out=tmp_path,
                   model=ModelSpec(path=stub_dynamic_dir, threshold=0.3, nms_iou=0.7),
                   settings=SegmentSettings(input_size=None))
    result = run_many(spec, LocalEngine())
    assert [(o.status, o.images) for o in result.outcomes] == [(Status.DONE, 15)]
    assert not result.failed and result.model is not None and result.model.kind == "stub"
    assert (result.model.nms_iou, result.model.threshold) == (0.7, 0.3)
