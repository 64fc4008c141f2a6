"""Results folders from someone else, and folders edited or damaged, through `detect redraw`,
`detect report`, `detect export --images`, `detect gif` and `detect track`: no connection to a
host the user did not name, nothing written through a planted link, no picture from outside the
folder, frames and evaluation judged alike, and one line (exit 2) naming the file for what cannot
be used, the folder left as it was."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.examples import examples
from helpers.paths import TINY_SEGMENT, TINY_V2_DIR
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from PIL import Image

from detect.core.errors import RecordError
from detect.engine.spec import SettingsRecord
from detect.model.classmap import ClassMap

CLASS_MAP = {"car": "VEHICLE", "truck": "VEHICLE", "person": "PEDESTRIAN"}  # no CYCLIST
MAP_FILE = "waymo_map.json"


def redraw(seg: Path, *flags: str) -> tuple[int, str, str]:
    return run_cli(["redraw", str(seg), "--no-eval", "--no-report", "--quiet", *flags])


@pytest.fixture(scope="module")
def runs(tiny_v2_path, stub_dynamic_dir, tmp_path_factory) -> dict[str, Path]:
    """Three finished runs of the tiny segment, made once for the file:
    - `plain`: the defaults (COCO's protocol, the default map, score floor 0.05), drawn at 0.2;
    - `judged`: started in its own folder with a relative input and a relative class map, Waymo's
      protocol, score floor 0.45, drawn at 0.5;
    - `bare`: no frames, no animations (`--no-png --no-gif`)."""
    root = tmp_path_factory.mktemp("hardening_redraw")
    common = ["--model", str(stub_dynamic_dir), "--quiet", "--no-report"]
    assert run_cli(["segment", str(tiny_v2_path), "--out", str(root / "plain"), "--threshold", "0.2", *common])[0] == 0
    started = root / "started_here"
    shutil.copytree(TINY_V2_DIR, started / "src")
    (started / MAP_FILE).write_text(json.dumps(CLASS_MAP))
    here = Path.cwd()
    os.chdir(started)
    try:
        code, _, err = run_cli(["segment", f"src/camera_image/{TINY_SEGMENT}.parquet", "--out", "judged",
                                "--class-map", MAP_FILE, "--protocol", "waymo", "--score-floor", "0.45",
                                "--threshold", "0.5", *common])
    finally:
        os.chdir(here)
    assert code == 0, err
    assert run_cli(["segment", str(tiny_v2_path), "--out", str(root / "bare"), "--no-png", "--no-gif", "--no-eval",
                    "--no-report", "--model", str(stub_dynamic_dir), "--quiet"])[0] == 0
    return {"plain": root / "plain" / TINY_SEGMENT, "judged": started / "judged" / TINY_SEGMENT,
            "bare": root / "bare" / TINY_SEGMENT}


@pytest.fixture
def plain(runs, tmp_path) -> Path:
    """A fresh copy of the plain run for each test (it redraws or damages it)."""
    return shutil.copytree(runs["plain"], tmp_path / "out" / TINY_SEGMENT, symlinks=True)


@pytest.fixture
def judged(runs, tmp_path) -> Path:
    return shutil.copytree(runs["judged"], tmp_path / "judged" / TINY_SEGMENT, symlinks=True)


def manifest_of(seg: Path) -> dict:
    return json.loads((seg / "manifest.json").read_text())


def edit_manifest(seg: Path, **changes: object) -> None:
    """`a__b=value` sets manifest["a"]["b"]; `a__b=DELETE` removes it."""
    manifest = manifest_of(seg)
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        place = manifest
        for part in path:
            place = place[part]
        if value is DELETE:
            del place[last]
        else:
            place[last] = value
    (seg / "manifest.json").write_text(json.dumps(manifest))


DELETE = object()


def pictures(seg: Path) -> dict[str, bytes]:
    """Every frame, tile and animation of a segment folder, by relative path."""
    return {str(p.relative_to(seg)): p.read_bytes() for p in sorted(seg.rglob("*"))
            if p.is_file() and p.suffix in (".png", ".jpg", ".gif", ".mp4") and "report" not in p.parts}


# A results folder never makes a reader go online -----------------------------------------------

class Listener:
    """A local TCP server that records every connection made to it (and answers none)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.connections: list[bytes] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(1)
                try:
                    self.connections.append(conn.recv(200))
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def listener(monkeypatch) -> Iterator[Listener]:
    """A host that records connections, and AWS credentials in the environment for a client to sign with."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    server = Listener()
    yield server
    server.close()


class RecordingFilesystems:
    """pyarrow.fs as `detect.waymo.sources` sees it, with every URI it is asked to open recorded."""

    def __init__(self, started: list[str]) -> None:
        import pyarrow.fs as pafs

        self._pafs = pafs
        real = pafs.FileSystem

        class FileSystem:
            @staticmethod
            def from_uri(uri: str):
                started.append(uri)
                return real.from_uri(uri)

        self.FileSystem = FileSystem

    def __getattr__(self, name: str) -> object:
        return getattr(self._pafs, name)


@pytest.fixture
def no_remote_filesystem(monkeypatch) -> list[str]:
    """Every filesystem detect asks pyarrow to start from a URI (gs://, hdfs://: no local server
    speaks them): none may be, from a results folder."""
    started: list[str] = []
    monkeypatch.setattr("detect.waymo.sources.pafs", RecordingFilesystems(started))
    return started


def remote_uris(port: int) -> list[str]:
    name = f"{TINY_SEGMENT}.parquet"
    return [f"s3://bucket/{name}?endpoint_override=127.0.0.1:{port}&scheme=http", f"gs://bucket/{name}",
            f"hdfs://127.0.0.1:{port}/{name}", f"file://127.0.0.1:{port}/{name}", f"http://127.0.0.1:{port}/{name}"]


@pytest.mark.slow
@pytest.mark.parametrize("which", range(5))
def test_redraw_never_opens_a_remote_source_a_results_folder_names(plain, listener, no_remote_filesystem, which):
    """A shared folder whose manifest names a remote file (its host, its options): redraw refuses
    in one line naming --source; no connection is made, no remote filesystem is started (none can
    then sit in its retries, deaf to SIGTERM)."""
    uri = remote_uris(listener.port)[which]
    edit_manifest(plain, input__path=uri)
    before = files_under(plain)
    code, _, err = redraw(plain, "--threshold", "0.6")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"detect: error: {plain}: cannot redraw: its source file ")
    assert err.endswith("is remote: a results folder never makes detect go online (name the file with --source)\n")
    assert files_under(plain) == before
    assert listener.connections == [] and no_remote_filesystem == []


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1])
def test_report_and_export_never_open_a_remote_source_a_results_folder_names(
        plain, tmp_path, listener, no_remote_filesystem, which):
    """The report cuts its close-ups from the drawn frames and says why; export --images writes no
    image and says why; no connection, no remote filesystem started."""
    edit_manifest(plain, input__path=remote_uris(listener.port)[which])
    code, out, err = run_cli(["report", str(plain)])
    assert code == 0 and (plain / "report.html").is_file()
    assert "is remote: a results folder never makes detect go online (name the file with --source)" in err
    assert "close-up(s) cut from the drawn frames instead" in err
    code, out, err = run_cli(["export", "coco", str(plain), "--images", "--out", str(tmp_path / "coco"), "--quiet"])
    assert code == 0 and (tmp_path / "coco" / "instances.json").is_file()
    assert f"{plain}: its input file " in err and "is remote: a results folder never makes detect go online" in err
    assert not any((tmp_path / "coco").rglob("*.jpg"))
    assert listener.connections == [] and no_remote_filesystem == []


@pytest.mark.slow
def test_the_file_the_user_names_is_read_and_recorded(plain, tiny_v2_path, listener, runs, tmp_path):
    """`--source` names the file a remote-recorded folder was made from: redraw reads it (checked
    by the recorded fingerprint) and records it; the report's close-ups come from it again."""
    edit_manifest(plain, input__path=remote_uris(listener.port)[0])
    code, out, err = redraw(plain, "--source", str(tiny_v2_path), "--threshold", "0.6")
    assert (code, err) == (0, "")
    assert manifest_of(plain)["input"]["path"] == str(tiny_v2_path.resolve())
    code, out, err = run_cli(["report", str(plain), "--source", str(TINY_V2_DIR)])
    assert code == 0 and "drawn frames instead" not in err
    assert listener.connections == []


def test_a_named_source_that_is_another_file_is_refused_by_the_fingerprint(plain, runs, tmp_path):
    other = tmp_path / "elsewhere" / f"{TINY_SEGMENT}.parquet"
    other.parent.mkdir()
    other.write_bytes(Path(TINY_V2_DIR / "camera_image" / f"{TINY_SEGMENT}.parquet").read_bytes() + b"\0")
    code, _, err = redraw(plain, "--source", str(other.parent))
    assert code == 2 and err.startswith(f"detect: error: {plain}: cannot redraw: its source file {other} has changed "
                                        f"since the run (")


# Links planted where redraw writes, and where gif reads ------------------------------------------

PLANTED = ["frames", "frames/FRONT", ".detect/mosaic", ".detect/mosaic/FRONT"]


def plant(seg: Path, relative: str, outside: Path) -> Path:
    """Move `relative` out of the folder and leave a link to it in its place; the link's target."""
    target = outside / relative.replace("/", "_")
    shutil.move(seg / relative, target)
    (seg / relative).symlink_to(target, target_is_directory=True)
    return target


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("relative", PLANTED)
def test_redraw_refuses_a_link_where_it_writes_and_writes_nothing_through_it(plain, tmp_path, relative):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = plant(plain, relative, outside)
    before, manifest = files_under(target), (plain / "manifest.json").read_bytes()
    code, _, err = redraw(plain, "--threshold", "0.6")
    assert (code, err) == (2, f"detect: error: {plain / relative} is a symlink: detect writes only real folders and "
                              f"files under --out; remove it or choose another --out\n")
    assert files_under(target) == before and (plain / "manifest.json").read_bytes() == manifest


@pytest.mark.parametrize("relative", ["frames/FRONT", ".detect/mosaic/FRONT"])
def test_gif_refuses_a_linked_folder_of_pictures_from_outside(plain, tmp_path, relative):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = plant(plain, relative, outside)
    for picture in target.iterdir():  # other pictures, named like the folder's
        Image.new("RGB", Image.open(picture).size, (255, 0, 0)).save(picture, "PNG" if picture.suffix == ".png"
                                                                      else "JPEG")
    before = pictures(plain)
    code, _, err = run_cli(["gif", str(plain)])
    assert (code, err) == (2, f"detect: error: {plain / relative} is a symlink: detect writes only real folders and "
                              f"files under --out; remove it or choose another --out\n")
    assert pictures(plain) == before


# Frames and evaluation judged alike; the score floor ---------------------------------------------

@pytest.mark.slow
def test_a_redraw_judges_its_frames_and_its_evaluation_with_the_runs_protocol_and_map(runs, judged):
    code, _, err = run_cli(["redraw", str(judged), "--threshold", "0.6", "--quiet", "--no-report"])
    assert code == 0, err
    errors = manifest_of(judged)["settings"]["errors"]
    map_file = str(runs["judged"].parents[1] / MAP_FILE)
    assert errors["protocol"] == "waymo" and errors["class_map"] == map_file
    evaluation = json.loads((judged / "eval.json").read_text())
    assert evaluation["protocol"]["name"] == "waymo" and evaluation["class_map"]["source"] == map_file
    assert "CYCLIST" not in evaluation["protocol"]["iou"]  # the map has none: nothing judged as one


@pytest.mark.slow
def test_a_protocol_asked_of_a_redraw_judges_both_the_frames_and_the_evaluation(plain):
    code, _, err = run_cli(["redraw", str(plain), "--protocol", "waymo", "--quiet", "--no-report"])
    assert code == 0, err
    assert manifest_of(plain)["settings"]["errors"]["protocol"] == "waymo"
    assert json.loads((plain / "eval.json").read_text())["protocol"]["name"] == "waymo"


@pytest.mark.parametrize(("which", "threshold", "floor"), [("judged", "0.35", "0.45"), ("plain", "0.01", "0.05")])
def test_a_redraw_below_the_score_floor_is_refused_naming_it(runs, tmp_path, which, threshold, floor):
    seg = shutil.copytree(runs[which], tmp_path / which)
    before = files_under(seg)
    code, _, err = redraw(seg, "--threshold", threshold)
    assert (code, err) == (2, f"detect: error: {seg}: cannot redraw at {threshold}: the run kept only boxes scoring "
                              f"{floor} or more (its score floor); redraw at {floor} or above, or run the model again "
                              f"with --score-floor {threshold}\n")
    assert files_under(seg) == before
    assert redraw(seg, "--threshold", floor)[0] == 0  # at the floor: every box it needs was kept


# Without a fingerprint; relative paths --------------------------------------------------------------

def test_without_a_fingerprint_the_sizes_the_journal_records_are_checked_then_it_is_recorded(plain, tmp_path):
    """A manifest without `input.fingerprint` (runs from before it existed): a file of the same
    segment with pictures of other sizes is refused; the run's own file is redrawn, and its
    fingerprint recorded for the next redraw."""
    from detect.tools.synthetic import write_camera_image_parquet
    from detect.waymo.readers import iter_frames

    def resized(jpeg: bytes) -> bytes:
        image = Image.open(io.BytesIO(jpeg))
        out = io.BytesIO()
        image.resize((image.width + 24, image.height + 16)).save(out, "JPEG")
        return out.getvalue()

    frames = [type(f)(f.segment_context_name, f.frame_timestamp_micros, f.camera_name, resized(f.jpeg))
              for f in iter_frames(str(TINY_V2_DIR / "camera_image" / f"{TINY_SEGMENT}.parquet"))]
    other = write_camera_image_parquet(tmp_path / "other" / f"{TINY_SEGMENT}.parquet", frames)
    recorded = manifest_of(plain)["input"]["path"]
    edit_manifest(plain, input__fingerprint=None, input__path=str(other))
    before = pictures(plain)
    code, _, err = redraw(plain, "--threshold", "0.6")
    first = frames[0]
    assert (code, err) == (2, f"detect: error: {plain}: cannot redraw: its source file {other} has changed since the "
                              f"run ({first.camera_name.name} {first.frame_timestamp_micros}: 120x80 now, 96x64 then; "
                              f"the manifest records no fingerprint)\n")
    assert pictures(plain) == before and manifest_of(plain)["status"] == "complete"
    edit_manifest(plain, input__path=recorded)
    assert redraw(plain, "--threshold", "0.6") == (0, "", "")
    assert manifest_of(plain)["input"]["fingerprint"]["size"] == Path(recorded).stat().st_size


def test_paths_are_recorded_absolute_and_a_run_is_redrawn_from_any_folder(runs, judged, tmp_path, monkeypatch):
    manifest = manifest_of(judged)
    started = runs["judged"].parents[1]
    assert manifest["input"]["path"] == str(started / "src" / "camera_image" / f"{TINY_SEGMENT}.parquet")
    assert manifest["input"]["ground_truth"] == f"camera_box file {started / 'src' / 'camera_box'}/{TINY_SEGMENT}.parquet"
    assert manifest["settings"]["errors"]["class_map"] == str(started / MAP_FILE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / MAP_FILE).write_text(json.dumps({"bicycle": "CYCLIST"}))  # another file of that name here
    monkeypatch.chdir(elsewhere)
    assert redraw(judged, "--threshold", "0.6") == (0, "", "")
    assert manifest_of(judged)["settings"]["errors"]["class_map"] == str(started / MAP_FILE)
    code, _, err = run_cli(["export", "coco", str(judged), "--images", "--out", "coco", "--quiet"])
    assert code == 0 and "not written" not in err and len(list(Path("coco").rglob("*.jpg"))) == 15


def test_relative_paths_an_older_manifest_records_are_refused_naming_them(runs, judged, monkeypatch):
    """The folder the run started in is not recorded: a relative path could name any file."""
    monkeypatch.chdir(runs["judged"].parents[1])  # even from there: the folder it meant cannot be known
    edit_manifest(judged, input__path=f"src/camera_image/{TINY_SEGMENT}.parquet")
    code, _, err = redraw(judged)
    assert (code, err) == (2, f"detect: error: {judged}: cannot redraw: its source file src/camera_image/"
                              f"{TINY_SEGMENT}.parquet is a path relative to the folder the run started in, which is "
                              f"not recorded (name the file with --source)\n")
    edit_manifest(judged, settings__errors__class_map=MAP_FILE)
    code, _, err = redraw(judged, "--source", "src")
    assert (code, err) == (2, f"detect: error: {judged / 'manifest.json'}: its settings cannot be read back "
                              f"(settings.errors.class_map: {MAP_FILE} is a path relative to the folder the run started "
                              f"in, which is not recorded); cannot redraw\n")
    assert redraw(judged, "--source", "src", "--class-map", MAP_FILE) == (0, "", "")


# Manifest values redraw cannot use -----------------------------------------------------------------

@pytest.mark.parametrize(("dotted", "value", "why"), [
    ("draw__threshold", "x", "settings.draw.threshold: expected a number, got 'x'"),
    ("draw__classes", 5, "settings.draw.classes: expected a list, got 5"),
    ("draw__line_width", 1e30, "settings.draw.line_width: expected a whole number, got 1e+30"),
    ("draw__line_width", 65, "settings.draw.line_width: expected 1 to 64, got 65"),
    ("draw__watermark", 5, "settings.draw.watermark: expected a text, got 5"),
    ("draw__max_boxes", 1e308, "settings.draw.max_boxes: expected a whole number, got 1e+308"),
    ("draw__unscored", "all", "settings.draw.unscored: expected one of boxes, chips, none, got 'all'"),
    ("max_frames", 1e308, "settings.max_frames: expected a whole number, got 1e+308"),
    ("first_frame", -1, "settings.first_frame: expected 0 to 9,223,372,036,854,775,807, got -1"),
    ("gif_width", True, "settings.gif_width: expected a whole number, got True"),
    ("cameras", ["FRONT", "FRONT"], "settings.cameras: expected \"all\" or camera names, each once, got ['FRONT', 'FRONT']"),
    ("max_pixels", 2**80, "settings.max_pixels: expected 256 to 268,435,456, got 1208925819614629174706176"),
    ("tile", {"size": 10}, "settings.tile.size: expected 64 to 4,096, got 10"),
    ("input_size", "fit:1x1", "settings.input_size: expected 32 to 4,096, got 1"),
    ("draw_mode", "boxes", "settings.draw_mode: expected one of auto, errors, detections, got 'boxes'"),
    ("errors__protocol", "iou", "settings.errors.protocol: expected one of coco, waymo, got 'iou'"),
    ("errors__types", ["BOAT"], "settings.errors.types[]: expected one of VEHICLE, PEDESTRIAN, SIGN, CYCLIST, got 'BOAT'"),
])
def test_a_manifest_value_redraw_cannot_use_is_one_line_and_the_folder_is_left_as_it_was(plain, dotted, value, why):
    edit_manifest(plain, **{f"settings__{dotted}": value})
    before = files_under(plain)
    code, _, err = redraw(plain, "--threshold", "0.6")
    assert (code, err) == (2, f"detect: error: {plain / 'manifest.json'}: its settings cannot be read back ({why}); "
                              f"cannot redraw\n")
    assert files_under(plain) == before  # never `status: redrawing`, nothing drawn


def test_the_settings_record_reads_back_what_it_wrote(runs):
    for name in ("plain", "judged", "bare"):
        manifest = manifest_of(runs[name])
        record = SettingsRecord.from_json(manifest["settings"], track=manifest["tracking"] is not None)
        assert record.to_json() == manifest["settings"]


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6)


@hypothesis_settings(max_examples=examples(1.0))
@given(data=st.data())
def test_any_value_in_any_settings_field_reads_back_or_is_one_record_error(runs, data):
    """Every field of the settings section, replaced by any JSON value of any type: a record the
    redraw can draw with, or a RecordError naming the field (never another exception)."""
    manifest = manifest_of(runs["judged"])
    settings = json.loads(json.dumps(manifest["settings"]))
    paths = [(key,) for key in settings] + [("draw", key) for key in settings["draw"]] + \
        [("errors", key) for key in settings["errors"]] + [("tile",), ("draw", "palette")]
    path = data.draw(st.sampled_from(paths))
    place = settings
    for part in path[:-1]:
        place = place[part]
    place[path[-1]] = data.draw(JSON_VALUES)
    try:
        record = SettingsRecord.from_json(settings, track=True, class_map=lambda source: ClassMap({3: 1}, source))
    except RecordError as err:
        assert str(err).startswith("settings") and "\n" not in str(err)
    else:
        assert 0 <= record.settings.style.threshold <= 1
        assert SettingsRecord.from_json(record.to_json(), track=True,
                                        class_map=lambda source: ClassMap({3: 1}, source)) == record


# Leftovers, an edited journal, `detect track` ------------------------------------------------------

LEFTOVERS = [".FRONT.0123abcd.tmp.gif", ".mosaic.89abcdef.tmp.gif", ".SIDE_LEFT.00ff00ff.tmp.mp4",
             "frames/FRONT/.1600000000000000.deadbeef.tmp.png", ".detect/mosaic/FRONT/.1600000000000000.0badf00d.tmp.jpg"]


@pytest.mark.parametrize("command", ["redraw", "gif"])
def test_temp_files_a_killed_redraw_left_are_swept_by_the_next_redraw_or_gif(plain, command):
    for name in LEFTOVERS:
        (plain / name).write_bytes(b"GIF89a half")
    (plain / ".notes.tmp").write_text("mine")  # not a name detect gives its temp files
    code, _, err = redraw(plain) if command == "redraw" else run_cli(["gif", str(plain)])
    assert (code, err) == (0, "")
    assert [name for name in LEFTOVERS if (plain / name).exists()] == []
    assert (plain / ".notes.tmp").read_text() == "mine"


@pytest.mark.parametrize(("key", "value"), [("t", 2**63 + 5), ("k", [-5]), ("k", [10**30])])
def test_a_journal_line_edited_past_reading_is_blamed_on_the_journal_before_anything_is_written(plain, key, value):
    """A timestamp past int64 (no source holds it: not "the source changed"), a class id no model
    gives: the journal is named, with the byte where it stops reading, and the folder is untouched."""
    path = plain / ".detect" / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if i >= 3 and json.loads(line)["k"])
    record = json.loads(lines[index])
    record[key] = value if key == "t" else value * len(record["k"])
    edited = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join([*lines[:index], edited, *lines[index + 1:]]))
    before = files_under(plain)
    code, _, err = redraw(plain, "--threshold", "0.6")
    intact = sum(len(line) for line in lines[:index])
    assert (code, err) == (2, f"detect: error: {path}: cannot be read back past byte {intact:,} of "
                              f"{path.stat().st_size:,} (edited or damaged: the images after it are unknown); "
                              f"cannot redraw\n")
    assert files_under(plain) == before


@pytest.mark.slow
def test_track_tells_of_old_ids_only_a_run_that_drew_pictures(runs, tmp_path):
    for name, drew in (("bare", False), ("plain", True)):
        seg = shutil.copytree(runs[name], tmp_path / name)
        code, _, err = run_cli(["track", str(seg), "--threshold", "0.6"])
        assert code == 0
        assert ("frames and animations drawn before show the old track ids" in err) is drew, err


# Mosaic tiles that are not their tiles ---------------------------------------------------------------

def tiles(seg: Path) -> list[Path]:
    return sorted((seg / ".detect" / "mosaic" / "FRONT").glob("*.jpg"))


def mosaic_without(seg: Path, tile: Path) -> bytes:
    """mosaic.gif rebuilt from a copy of the folder without `tile` (its frame shrunk in its place)."""
    copy = shutil.copytree(seg, seg.parent / "without_tile")
    (copy / tile.relative_to(seg)).unlink()
    assert run_cli(["gif", str(copy)])[0] == 0
    return (copy / "mosaic.gif").read_bytes()


def tile_bytes(size: tuple[int, int], comment: dict) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (255, 0, 0)).save(out, "JPEG", comment=json.dumps(comment).encode())
    return out.getvalue()


def test_a_tile_of_another_size_is_not_used_and_named(plain):
    tile = tiles(plain)[0]
    expected = mosaic_without(plain, tile)
    tile.write_bytes(tile_bytes((16, 16), {"legend": [], "chips_left_out": 0}))  # an older tile's comment, no key
    code, _, err = run_cli(["gif", str(plain)])
    assert (plain / "mosaic.gif").read_bytes() == expected
    assert code == 1 and err == (f"detect: note: {tile} is 16x16, not the 16x11 of its 96x64 frame shrunk; the mosaic "
                                 f"shows the frame shrunk\n")


def test_a_tile_of_another_image_is_not_used_and_named(plain):
    first, second = tiles(plain)[:2]
    expected = mosaic_without(plain, first)
    shutil.copy(second, first)  # same camera, same size, another moment
    code, _, err = run_cli(["gif", str(plain)])
    assert (plain / "mosaic.gif").read_bytes() == expected
    assert code == 1 and err == (f"detect: note: {first} is the mosaic tile of FRONT {second.stem}, not of this image; "
                                 f"the mosaic shows the frame shrunk\n")
