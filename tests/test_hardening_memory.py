"""Memory bounded by what a run needs, not by what its files hold or claim: tracking scores of a
sequence with tens of thousands of label ids (a converter that writes one id per box), and Parquet
tables of millions of repeated rows in a few hundred KB. Peak memory is measured in a process of its
own; the scores are held to TrackEval's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.cli import run
from helpers.examples import examples
from helpers.memory import detect, peak_rss
from helpers.paths import ROOT
from helpers.results_folders import PEDESTRIAN, PERSON, dets, key, labels, segment_folder, walking_pedestrian
from hypothesis import given, settings
from hypothesis import strategies as st

from detect.track import TrackEvalFrame, TrackingPool, frame_counts, metric_results, to_trackeval
from detect.track.identity import identity_match

# One labeled pedestrian walking, tracked as id 1, among `per_image` - 1 other labels a frame, each
# box with an id of its own: `frames` x `per_image` label ids.
CROWD = """
import json, resource, sys
import numpy as np
from detect.core.matching import COCO_PROTOCOL
from detect.track import TrackEvalFrame, TrackingPool, frame_counts

frames, per_image = int(sys.argv[1]), int(sys.argv[2])
sequence = []
for t in range(frames):
    walker = [100.0 + t, 100.0, 200.0 + t, 300.0]
    others = [[300.0 + 14 * (j % 100), 400.0 + 14 * (j // 100), 310.0 + 14 * (j % 100), 410.0 + 14 * (j // 100)]
              for j in range(per_image - 1)]
    sequence.append(TrackEvalFrame(tuple(f"box{t}_{j}" for j in range(per_image)), [walker, *others], [1], [walker]))
pool = TrackingPool(COCO_PROTOCOL)
pool.add(2, sequence)
scores = pool.scores()[2]
counts = frame_counts(sequence, 0.5)
print(json.dumps({"idf1": scores.idf1, "mota": scores.mota, "objects": scores.objects,
                  "idtp": float(counts.idtp.sum()), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def crowd(frames: int, per_image: int) -> dict:
    return json.loads(peak_rss([sys.executable, "-c", CROWD, str(frames), str(per_image)])["stdout"])


@pytest.mark.slow
def test_identity_scores_of_twelve_thousand_label_ids_take_megabytes_not_gigabytes():
    """TrackEval's Identity held two dense (ids + ids)^2 float64 matrices: 2.3 GB for 12,000 ids."""
    result = crowd(100, 120)
    # the walker's track is on one label id's box (each id is one box): IDTP 1 of 12,000 labels and 100 tracked boxes
    assert result["idf1"] == pytest.approx(1 / (1 + 0.5 * 11_999 + 0.5 * 99))
    assert result["idtp"] == 1 and result["objects"] == 12_000
    assert result["peak_mb"] < 400


def sequences(seed: int, count: int) -> list[list[TrackEvalFrame]]:
    """Random sequences: a few objects, boxes near them with track ids that switch and repeat."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        frames = []
        objects, track_ids = int(rng.integers(1, 8)), int(rng.integers(1, 10))
        for _ in range(int(rng.integers(1, 12))):
            n, m = int(rng.integers(0, objects + 1)), int(rng.integers(0, 6))
            corners = rng.uniform(0, 100, (n, 2))
            boxes = np.concatenate([corners, corners + rng.uniform(10, 30, (n, 2))], axis=1)
            near = boxes[rng.integers(0, n, m)] + rng.normal(0, 4, (m, 4)) if n else rng.uniform(0, 100, (m, 4))
            near[:, 2:] = np.maximum(near[:, 2:], near[:, :2] + 1)
            frames.append(TrackEvalFrame(tuple(f"o{rng.integers(0, objects)}" for _ in range(n)), boxes,
                                      rng.choice(2 * track_ids + m, m, replace=False), near))
        out.append(frames)
    return out


@pytest.mark.slow
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.3, 0.5, 0.7]))
@settings(max_examples=examples(0.5), deadline=None)
def test_identity_is_trackevals_to_the_box(seed, iou):
    from detect.track.scoring import trackeval_metrics

    identity = trackeval_metrics().Identity({"THRESHOLD": iou, "PRINT_CONFIG": False})
    for frames in sequences(seed, 10):
        seq = to_trackeval(frames)
        theirs = identity.eval_sequence(seq.data)
        ours = identity_match(seq.gt_ids, seq.tracker_ids, seq.similarity, len(seq.label_keys), iou).result()
        assert ours == {k: int(theirs[k]) for k in ("IDTP", "IDFN", "IDFP")}


def test_pooled_scores_are_trackevals_with_its_own_identity():
    from detect.core.matching import COCO_PROTOCOL

    runs = sequences(7, 20)
    pool = TrackingPool(COCO_PROTOCOL)
    for frames in runs:
        pool.add(PEDESTRIAN, frames)
    ours, theirs = pool.scores()[PEDESTRIAN], metric_results(runs, 0.5)
    assert ours.idf1 == pytest.approx(float(theirs["Identity"]["IDF1"]), abs=1e-12)
    assert ours.hota == pytest.approx(float(np.mean(theirs["HOTA"]["HOTA"])), abs=1e-12)
    assert sum(float(frame_counts(f, 0.5).idtp.sum()) for f in runs) == float(theirs["Identity"]["IDTP"])


@pytest.mark.slow
def test_a_sequence_with_more_id_pairs_than_hotas_matrices_take_is_left_out_with_a_note(tmp_path, monkeypatch):
    from detect.track import TooManyIds, trackeval_input

    many = [TrackEvalFrame((f"label{t}",), [[0, 0, 10, 10]], [t], [[0, 0, 10, 10]]) for t in range(1_500)]
    with pytest.raises(TooManyIds, match=r"^1,500 label ids x 1,500 track ids, more than the 2,000,000 id pairs "):
        to_trackeval(many).check_id_pairs()
    with pytest.raises(TooManyIds):
        frame_counts(many, 0.5)
    # the same rule at the bound of 2 x 2, on two folders a test can evaluate and compare quickly
    monkeypatch.setattr(trackeval_input, "MAX_ID_PAIRS", 3)
    for side in ("a", "b"):
        images = {key(i): (labels(((100.0, 100.0, 200.0, 300.0), PEDESTRIAN), ((600.0, 100.0, 700.0, 300.0), PEDESTRIAN)),
                           dets(((100.0, 100.0, 200.0, 300.0), 0.9, PERSON), ((600.0, 100.0, 700.0, 300.0), 0.8, PERSON)))
                  for i in range(3)}
        segment_folder(tmp_path / side, images, knows=[PERSON], track_ids=[1, 2] * 3)
    assert run("eval", str(tmp_path / "a"), "--quiet") == (0, (
        "detect: note: seg_eval: FRONT PEDESTRIAN: 2 label ids x 2 track ids, more than the 3 id pairs HOTA's dense "
        "matrices are computed for; its tracking scores are left out\n"))
    assert json.loads((tmp_path / "a" / "seg_eval" / "eval.json").read_text()).get("tracking_level_2", {}) == {}
    code, err = run("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"), "--quiet")
    assert code == 0 and ("detect: note: 2 label ids x 2 track ids, more than the 3 id pairs HOTA's dense matrices are "
                          "computed for in a camera sequence: no tracking comparison") in err


@pytest.mark.slow
def test_detect_eval_of_a_camera_box_with_an_id_per_box_stays_under_a_gigabyte_and_a_half(tmp_path):
    """100 images of 120 labels, each with an id of its own, and one tracked pedestrian."""
    images = {}
    for i in range(100):
        walker = (100.0 + i, 100.0, 200.0 + i, 300.0)
        others = [(300.0 + 14 * (j % 100), 400.0 + 14 * (j // 100), 310.0 + 14 * (j % 100), 410.0 + 14 * (j // 100))
                  for j in range(119)]
        images[key(i)] = (labels((walker, PEDESTRIAN), *[(b, PEDESTRIAN) for b in others],
                                 ids=[f"box{i}_{j}" for j in range(120)]), dets((walker, 0.9, PERSON)))
    segment = segment_folder(tmp_path, images, knows=[PERSON], track_ids=[1] * 100)
    done = peak_rss(detect("eval", str(segment), "--quiet"))
    assert (done["code"], done["stderr"]) == (0, "")
    assert done["peak_mb"] < 1536
    scores = json.loads((segment / "eval.json").read_text())["tracking_level_2"]["PEDESTRIAN"]
    assert scores["idf1"] == pytest.approx(1 / (1 + 0.5 * 11_999 + 0.5 * 99), abs=1e-6) and scores["objects"] == 12_000


def _bombs(paths: list[Path], rows: int) -> None:
    """`helpers.results_folders.repeated` in a process of its own (each table is built whole to write it)."""
    script = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
              "from helpers.results_folders import repeated; [repeated(Path(p), int(sys.argv[2])) for p in sys.argv[3:]]")
    done = peak_rss([sys.executable, "-c", script, str(ROOT / "tests"), str(rows), *map(str, paths)])
    assert done["code"] == 0, done["stderr"]


@pytest.mark.slow
def test_five_million_repeated_rows_cost_no_memory_in_the_report_and_eval(tmp_path):
    """A 300 KB tracking.parquet made the report pass 3 GB, a 200 KB detections.parquet eval and compare."""
    from detect.evaluate.tracking_table import TRACKING_SCHEMA

    segment = walking_pedestrian(tmp_path / "run")
    row = {"key.segment_context_name": "seg_eval", "key.frame_timestamp_micros": key(1).frame_timestamp_micros,
           "key.camera_name": 1, "type": PEDESTRIAN, "type_name": "PEDESTRIAN", "track_id": 2, "key.camera_object_id": "obj0",
           "iou": 1.0, "id_switch": True, "fragmentation": False, "previous_track_id": 1, "xmin": 110.0, "ymin": 100.0,
           "xmax": 210.0, "ymax": 300.0, "iou_threshold": 0.5}  # one ID switch, the run's tracking.parquet
    pq.write_table(pa.Table.from_pylist([row], schema=TRACKING_SCHEMA), tmp_path / "run" / "tracking.parquet")
    _bombs([tmp_path / "run" / "tracking.parquet", segment / "detections.parquet"], 5_000_000)
    assert (tmp_path / "run" / "tracking.parquet").stat().st_size < 400_000
    assert (segment / "detections.parquet").stat().st_size < 300_000
    for argv in (("report", str(segment)), ("eval", str(segment), "--quiet")):
        done = peak_rss(detect(*argv))
        assert done["code"] == 2 and "detections.parquet holds 5,000,000 rows" in done["stderr"], argv[0]
        assert done["peak_mb"] < 600, argv[0]
    walking_pedestrian(tmp_path / "fresh")
    (tmp_path / "fresh" / "seg_eval" / "detections.parquet").replace(segment / "detections.parquet")
    done = peak_rss(detect("report", str(segment)))
    assert done["code"] == 0 and "tracking.parquet holds 5,000,000 rows" in done["stderr"] and done["peak_mb"] < 600
