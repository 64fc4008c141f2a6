import json
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT

from detect.cli import main
from detect.cli.console import relative
from detect.core.cameras import CameraName
from detect.core.errors import InputError, UnsupportedURIError
from detect.tools.synthetic import repeat_frames, write_camera_image_parquet, write_frames_tfrecord
from detect.waymo.camera_labels import read_labels
from detect.waymo.readers import iter_frames, read_keys
from detect.waymo.selection import FrameFilter
from detect.waymo.sources import resolve, resolve_one


def _keys(frames):
    return [(f.frame_timestamp_micros, int(f.camera_name)) for f in frames]


def test_v1_real_frame_yields_five_cameras_in_order(real_camera_frames):
    assert [f.camera_name for f in real_camera_frames] == list(CameraName)
    assert {f.segment_context_name for f in real_camera_frames} == {REAL_SEGMENT}
    assert all(f.jpeg[:2] == b"\xff\xd8" for f in real_camera_frames)


def test_v2_rewrite_of_the_real_frame_reads_back_identically(real_v2_path, real_camera_frames):
    assert list(iter_frames(str(real_v2_path))) == real_camera_frames


def test_a_verified_v1_file_reads_the_same_frames_and_labels_without_tensorflow(real_frame_path):
    """`detect redraw` reads a file whose fingerprint it checked: directly, not through TensorFlow."""
    code = ("import json, sys\n"
            "from detect.waymo.camera_labels import read_labels\n"
            "from detect.waymo.readers import iter_frames, read_keys\n"
            f"keys = read_keys({str(real_frame_path)!r}, verified=True)\n"
            "frames = list(iter_frames(keys.source, keys=keys))\n"
            "print(json.dumps([[f.frame_timestamp_micros, int(f.camera_name), len(f.jpeg)] for f in frames]))\n"
            "print(json.dumps([keys.labels, read_labels(keys).count, 'tensorflow' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    keys = read_keys(str(real_frame_path))
    frames = list(iter_frames(str(real_frame_path), keys=keys))
    assert json.loads(out[0]) == [[f.frame_timestamp_micros, int(f.camera_name), len(f.jpeg)] for f in frames]
    assert json.loads(out[1]) == [keys.labels, read_labels(keys).count, False]
    assert len(frames) == 5 and "66 boxes" in keys.labels


def test_tiny_v2_fixture_is_in_waymo_schema(tiny_v2_path):
    schema = pq.read_schema(tiny_v2_path)
    assert schema.field("key.camera_name").type == pa.int8()
    assert schema.field("key.frame_timestamp_micros").type == pa.int64()
    assert schema.field("key.segment_context_name").type == pa.string()
    assert schema.field("[CameraImageComponent].image").type == pa.binary()


def test_shuffled_v2_rows_come_out_sorted(tiny_v2_path):
    table = pq.read_table(tiny_v2_path, columns=["key.frame_timestamp_micros", "key.camera_name"])
    stored = list(zip(table.column(0).to_pylist(), table.column(1).to_pylist()))
    assert stored != sorted(stored), "the fixture must be stored unsorted to prove sorting"
    frames = list(iter_frames(str(tiny_v2_path)))
    assert _keys(frames) == sorted(stored)


def test_v2_reader_projects_key_and_image_columns_only(tiny_v2_path, monkeypatch):
    seen = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        seen.append(tuple(kwargs["columns"]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    list(iter_frames(str(tiny_v2_path)))
    assert seen and all(not any("pose" in c or "velocity" in c for c in cols) for cols in seen)


def test_v2_reader_skips_row_groups_without_wanted_rows(real_camera_frames, tmp_path, monkeypatch):
    frames = repeat_frames(real_camera_frames[:1], 6, segment_context_name="seg")
    path = write_camera_image_parquet(tmp_path / "seg.parquet", frames, row_group_size=2)
    groups = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        groups.extend(kwargs["row_groups"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    got = list(iter_frames(str(path), FrameFilter(first_frame=4)))
    assert len(got) == 2 and groups == [2]


def test_filters_apply_to_both_formats(real_camera_frames, tmp_path):
    frames = repeat_frames(real_camera_frames, 4, segment_context_name="seg")
    v2 = write_camera_image_parquet(tmp_path / "seg.parquet", frames, shuffle_seed=1)
    v1 = write_frames_tfrecord(tmp_path / "seg.tfrecord", frames, shuffle_seed=1)
    wanted = FrameFilter(cameras=(CameraName.FRONT, CameraName.SIDE_RIGHT), first_frame=1, max_frames=2)
    got_v2 = _keys(iter_frames(str(v2), wanted))
    got_v1 = _keys(iter_frames(str(v1), wanted))
    t0 = frames[0].frame_timestamp_micros
    expected = [(t0 + i * 100_000, c) for i in (1, 2) for c in (1, 5)]
    assert got_v2 == expected and got_v1 == expected


def test_flat_download_names_and_split_directories(tiny_v2_path, tmp_path):
    flat = tmp_path / f"training_camera_image_{TINY_SEGMENT}.parquet"
    shutil.copy(tiny_v2_path, flat)
    shutil.copy(tiny_v2_path.parent.parent / "camera_box" / tiny_v2_path.name,
                tmp_path / f"training_camera_box_{TINY_SEGMENT}.parquet")
    assert [s.path for s in resolve(str(tmp_path))] == [str(flat)]
    assert read_keys(str(flat)).labels.startswith("camera_box file ")
    split = tiny_v2_path.parent.parent
    assert [s.name for s in resolve(str(split))] == [tiny_v2_path.name]


def test_file_uri_goes_through_pyarrow_filesystems(tiny_v2_path):
    frames = list(iter_frames(f"file://{tiny_v2_path}"))
    assert len(frames) == 15


def test_format_detected_by_content_without_suffix(real_frame_path, tiny_v2_path, tmp_path):
    a, b = tmp_path / "segment_a", tmp_path / "segment_b"
    shutil.copy(real_frame_path, a)
    shutil.copy(tiny_v2_path, b)
    assert resolve_one(str(a)).format == "v1"
    assert resolve_one(str(b)).format == "v2"


def test_v2_streaming_reads_pages_not_whole_files(real_camera_frames, tmp_path):
    """Memory is bounded by pages: allocations stay far below the file size."""
    frames = repeat_frames(real_camera_frames, 30, segment_context_name="seg")
    path = write_camera_image_parquet(tmp_path / "seg.parquet", frames)
    assert pq.ParquetFile(path).metadata.num_row_groups == 1
    size = path.stat().st_size
    peak = 0
    for _ in iter_frames(str(path)):
        peak = max(peak, pa.total_allocated_bytes())
    assert peak < size / 4, (peak, size)


# --- every input error: one line, naming the file, exit code 2 -----------------------------------

def _error(tmp_path, capsys, path):
    code = main(["info", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_error_missing_path(tmp_path, capsys):
    assert (_error(tmp_path, capsys, tmp_path / "nope.parquet")
            == f"detect: error: {tmp_path}/nope.parquet: no such file or directory")


def test_error_empty_directory(tmp_path, capsys):
    assert _error(tmp_path, capsys, tmp_path) == (
        f"detect: error: {tmp_path}: no Waymo segment files here (expected *.parquet camera_image files or *.tfrecord)"
    )


def test_error_truncated_parquet(tiny_v2_path, tmp_path, capsys):
    bad = tmp_path / "cut.parquet"
    bad.write_bytes(tiny_v2_path.read_bytes()[:5000])
    message = _error(tmp_path, capsys, bad)
    assert message.startswith(f"detect: error: {bad}: not a readable Parquet file (")


def test_error_not_parquet(tmp_path, capsys):
    bad = tmp_path / "notes.parquet"
    bad.write_text("hello")
    assert _error(tmp_path, capsys, bad).startswith(f"detect: error: {bad}: not a readable Parquet file (")


def test_error_unknown_content(tmp_path, capsys):
    bad = tmp_path / "segment.bin"
    bad.write_bytes(b"\x00" * 64)
    assert _error(tmp_path, capsys, bad) == f"detect: error: {bad}: not a Waymo segment (neither Parquet nor TFRecord content)"


def test_error_truncated_tfrecord(real_frame_path, tmp_path, capsys):
    bad = tmp_path / "cut.tfrecord"
    bad.write_bytes(real_frame_path.read_bytes()[:100_000])
    assert _error(tmp_path, capsys, bad).startswith(f"detect: error: {bad}: truncated or corrupt TFRecord at record 0 (")


def test_error_wrong_component(tiny_v2_path, tmp_path, capsys):
    box = tiny_v2_path.parent.parent / "camera_box" / tiny_v2_path.name
    assert _error(tmp_path, capsys, box) == relative(  # the CLI writes paths under the working directory relative to it
        f"detect: error: {box}: is a camera_box component file; expected a camera_image component "
        "(column '[CameraImageComponent].image' missing)"
    )


def test_error_wrong_types(tiny_v2_path, tmp_path, capsys):
    table = pq.read_table(tiny_v2_path)
    names = [str(c) for c in table.column("key.camera_name").to_pylist()]
    table = table.set_column(table.schema.get_field_index("key.camera_name"), "key.camera_name", pa.array(names))
    bad = tmp_path / "strings.parquet"
    pq.write_table(table, bad)
    assert _error(tmp_path, capsys, bad) == (
        f"detect: error: {bad}: column 'key.camera_name' has type string, expected integer"
    )


def test_error_unsupported_uri(capsys):
    code = main(["info", "foo://bucket/segment.parquet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == (
        "detect: error: foo://bucket/segment.parquet: cannot open foo:// here "
        "(Unrecognized filesystem type in URI: foo://bucket/segment.parquet); "
        "supported schemes are local paths, file://, gs:// and s3://"
    )
    with pytest.raises(UnsupportedURIError):
        resolve("foo://x/y")


def test_error_directory_given_to_single_segment_reader(tmp_path, tiny_v2_path):
    shutil.copy(tiny_v2_path, tmp_path / "a.parquet")
    shutil.copy(tiny_v2_path, tmp_path / "b.parquet")
    with pytest.raises(InputError, match="holds 2 segment files; give one file, or use `detect run` for many"):
        resolve_one(str(tmp_path))


def test_error_unknown_camera_number(tiny_v2_path, tmp_path):
    table = pq.read_table(tiny_v2_path)
    cams = pa.array([9] * table.num_rows, pa.int8())
    table = table.set_column(table.schema.get_field_index("key.camera_name"), "key.camera_name", cams)
    bad = tmp_path / "cam9.parquet"
    pq.write_table(table, bad)
    with pytest.raises(InputError, match=r"unknown key.camera_name value\(s\) \[9\]; expected 1-5"):
        read_keys(str(bad))


# --- detect info -----------------------------------------------------------------------------------

def test_info_on_the_real_frame(real_frame_path, capsys):
    assert main(["info", str(real_frame_path)]) == 0
    out = capsys.readouterr().out
    assert f"segment   {REAL_SEGMENT}" in out
    assert "  FRONT            1 images  1920x1280" in out
    assert "  SIDE_RIGHT       1 images  1920x886" in out
    assert "labels    camera_labels in the frames (66 boxes)" in out


def test_info_json_on_v2(real_v2_path, capsys):
    assert main(["info", str(real_v2_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["segment_context_name"] == REAL_SEGMENT
    assert data["format"] == "v2 Parquet (camera_image)"
    sizes = {c["camera_name"]: (c["width"], c["height"]) for c in data["cameras"]}
    assert sizes == {"FRONT": (1920, 1280), "FRONT_LEFT": (1920, 1280), "FRONT_RIGHT": (1920, 1280),
                     "SIDE_LEFT": (1920, 886), "SIDE_RIGHT": (1920, 886)}
    assert data["has_labels"] is False


def test_info_tiny_fixture_reports_rate_and_labels(tiny_v2_path, capsys):
    assert main(["info", str(tiny_v2_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["frames"] == 3 and data["images"] == 15 and data["frame_rate_hz"] == 10.0
    assert data["has_labels"] is True
