"""Property tests over untrusted input: the readers, the JPEG gate, the model adapter, the name rule.

Any bytes or names give a result or a `DetectError`, never another exception, and never a path
outside OUT. Hypothesis reuses function-scoped fixtures across examples, so every example that
writes a file makes its own temporary directory.
"""

from __future__ import annotations

import io
import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TypeVar
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.examples import examples
from helpers.paths import REAL_SEGMENT
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from detect.core.cameras import CameraName
from detect.core.errors import DetectError
from detect.core.names import MAX_NAME_CHARS, is_safe_name, printable, segment_dir_name
from detect.core.records import CameraFrame, Detections
from detect.core.tf_env import import_tensorflow
from detect.model.contract import to_detections
from detect.model.inputs import decode_error, decode_stream
from detect.results.layout import segment_dir
from detect.tools.synthetic import write_camera_image_parquet, write_frames_tfrecord
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE, check_size
from detect.waymo.info import segment_info
from detect.waymo.readers import iter_frames, read_keys
from detect.waymo.schema import CAMERA, IMAGE, SEGMENT, TIMESTAMP

T = TypeVar("T")

SUPPRESSED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
START = 1_600_000_000_000_000
# libjpeg refuses headers above this side before any size check of ours runs.
LIBJPEG_MAX_SIDE = 65500


def fuzz(share: float) -> settings:
    """Hypothesis settings for these tests: `share` of the profile's examples (tests/helpers/examples.py: the
    ci profile's 300 for a share of 1), no deadline (TensorFlow's first call takes seconds)."""
    return settings(max_examples=examples(share), deadline=None, suppress_health_check=SUPPRESSED)


# --- strategies --------------------------------------------------------------------------------

# Every code point, surrogates included, with the path-hostile ones drawn often.
ANY_CHAR = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),
    st.sampled_from(list("/\\\x00\n\r\t .-_~*?")),
)
FRAGMENTS = st.sampled_from(["..", ".", "/", "\\", "\x00", "\n", "a", "renamed-", "é", "\ud800", "\u202e", "x" * 100])
NAMES = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.text(ANY_CHAR, min_size=100, max_size=1000),
    st.lists(FRAGMENTS, max_size=12).map("".join),
)
SAFE_NAMES = st.from_regex(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{MAX_NAME_CHARS - 1}}}", fullmatch=True).filter(
    lambda name: name.casefold() not in ("frames", "report"))


# Names a Parquet string column or a proto string can hold: valid UTF-8, so no lone surrogates.
STORABLE_NAMES = st.one_of(
    st.just(REAL_SEGMENT),
    st.text(st.one_of(st.characters(codec="utf-8"), st.sampled_from(list("/\\\x00\n.\u202e"))), max_size=300),
)
NAME_EXAMPLES = ["", ".", "..", "/", "/etc", "../x", "a/b", "x" * 300, "a\nb", "a\x00b", REAL_SEGMENT]


@cache
def tiny_jpeg(width: int = 24, height: int = 16, shade: int = 0) -> bytes:
    """A small valid baseline JPEG (SOF0), made with PIL."""
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 200 - shade, 90)).save(buffer, "JPEG", quality=60)
    return buffer.getvalue()


def with_header_size(jpeg: bytes, width: int, height: int) -> bytes:
    """`jpeg` with its SOF0 marker claiming `width` x `height` (the pixels stay tiny)."""
    at = jpeg.index(b"\xff\xc0")
    return jpeg[: at + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + jpeg[at + 9:]


SIDES = st.one_of(st.integers(0, 65535), st.sampled_from([0, 15, 16, 4096, 13000, 16384, 16385, 65500, 65535]))
CLAIMED_SIZE_JPEGS = st.builds(lambda w, h: with_header_size(tiny_jpeg(), w, h), SIDES, SIDES)
IMAGE_BYTES = st.one_of(
    st.builds(tiny_jpeg, st.integers(1, 40), st.integers(1, 40), st.integers(0, 200)),
    CLAIMED_SIZE_JPEGS,
    st.binary(max_size=64),
    st.binary(max_size=64).map(lambda b: b"\xff\xd8" + b),
)


# Byte edits as (anchor, offset, new byte): the offset counts from the anchor, modulo the length.
# Anchors aim edits at the parts a parser trusts (the segment name, the JPEG and its SOF header).
Edit = tuple[str, int, int]
EDITS = st.lists(
    st.tuples(st.sampled_from(["start", "end", "name", "jpeg", "sof"]), st.integers(-4096, 4096), st.integers(0, 255)),
    max_size=4,
)
CUTS = st.one_of(st.none(), st.integers(0, 8192))


def mutate(data: bytes, edits: list[Edit], cut: int | None, name: str = "") -> bytes:
    """`data` with the `edits` applied, then cut to its first `cut` bytes."""
    if not data:
        return data
    anchors = {
        "start": 0,
        "end": len(data),
        "name": data.find(name.encode()) if name else 0,
        "jpeg": data.find(b"\xff\xd8"),
        "sof": data.find(b"\xff\xc0"),
    }
    buffer = bytearray(data)
    for anchor, offset, value in edits:
        buffer[(max(anchors[anchor], 0) + offset) % len(buffer)] = value
    return bytes(buffer if cut is None else buffer[:cut])


def mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """`data` under drawn edits and cuts."""
    return st.builds(mutate, st.just(data), EDITS, CUTS)


def example_frames(name: str) -> list[CameraFrame]:
    """Two camera images of one frame, for explicit examples."""
    return [CameraFrame(name, START, CameraName.FRONT, tiny_jpeg()),
            CameraFrame(name, START, CameraName.FRONT_LEFT, tiny_jpeg(shade=40))]


@st.composite
def camera_frames(draw: st.DrawFn) -> list[CameraFrame]:
    """2-3 camera images of one segment, tiny valid JPEGs, under a drawn (hostile) segment name."""
    name = draw(STORABLE_NAMES)
    cameras = draw(st.lists(st.sampled_from(list(CameraName)), min_size=2, max_size=3))
    return [
        CameraFrame(name, START + (i // 2) * 100_000, camera, tiny_jpeg(shade=40 * i))
        for i, camera in enumerate(cameras)
    ]


# --- helpers -----------------------------------------------------------------------------------

@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory for one Hypothesis example, holding an empty `out/`."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        root = Path(tmp)
        (root / "out").mkdir()
        yield root


def result_or_refusal(call: Callable[[], T]) -> T | None:
    """`call()`, or None when it refuses with a DetectError; any other exception fails the test."""
    try:
        return call()
    except DetectError:
        return None


def assert_inside(out: Path, name: object) -> None:
    """`name` is a str whose segment directory is a direct child of `out`."""
    assert isinstance(name, str), f"segment name {name!r} is {type(name).__name__}, not str"
    path = segment_dir(out, name)
    assert path.resolve().parent == out.resolve()


def check_all_readers(path: Path, out: Path) -> None:
    """Every reader entry point on `path` returns or refuses with a DetectError, and every segment
    name it hands back maps to a directory inside `out`."""
    uri = str(path)
    names: list[object] = []
    keys = result_or_refusal(lambda: read_keys(uri))
    if keys is not None:
        names += keys.segment_names
        names += [f.segment_context_name for f in result_or_refusal(lambda: list(iter_frames(uri, keys=keys))) or []]
    names += [f.segment_context_name for f in result_or_refusal(lambda: list(iter_frames(uri))) or []]
    info = result_or_refusal(lambda: segment_info(uri))
    if info is not None:
        names.append(info.segment_context_name)
    for name in names:
        assert_inside(out, name)


V2Row = tuple[str | bytes | None, int | None, int | None, bytes | None]


def write_v2_rows(path: Path, rows: list[V2Row]) -> Path:
    """A camera_image Parquet file holding exactly these (name, timestamp, camera, image) rows.

    A name given as bytes is stored as they are: Parquet does not check that a string is UTF-8.
    """
    names, times, cameras, images = (list(column) for column in zip(*rows)) if rows else ([], [], [], [])
    raw_names = [n.encode() if isinstance(n, str) else n for n in names]
    table = pa.table({
        SEGMENT: pa.array(raw_names, pa.binary()).view(pa.string()),
        TIMESTAMP: pa.array(times, pa.int64()),
        CAMERA: pa.array(cameras, pa.int8()),
        IMAGE: pa.array(images, pa.binary()),
    })
    pq.write_table(table, path)
    return path


def frame_record(name: str, timestamp: int, images: list[tuple[int, bytes]]) -> bytes:
    """One serialized Waymo `Frame` proto with these (camera number, JPEG) images."""
    from waymo_open_dataset import dataset_pb2

    frame = dataset_pb2.Frame()
    frame.context.name = name
    frame.timestamp_micros = timestamp
    for camera, jpeg in images:
        image = frame.images.add()
        image.name = camera
        image.image = jpeg
    return frame.SerializeToString()


def write_tfrecord(path: Path, records: list[bytes]) -> Path:
    """A TFRecord file with valid framing around `records`, whatever they hold."""
    tf = import_tensorflow()
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return path


@pytest.fixture(scope="module")
def out_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def waymo_protos() -> object:
    """Waymo's protos, which v1 TFRecords need; the v1 tests skip without them."""
    return pytest.importorskip("waymo_open_dataset.dataset_pb2")


# --- 1. names ----------------------------------------------------------------------------------

def with_name_examples(**other: object) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Run the known hostile names (with `other` arguments fixed) before whatever Hypothesis draws."""
    def decorate(test: Callable[..., None]) -> Callable[..., None]:
        for name in NAME_EXAMPLES:
            test = example(name=name, **other)(test)
        return test
    return decorate


@st.composite
def name_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """Two names: unrelated, or one character apart (same readable part, so only the digest differs)."""
    first = draw(NAMES)
    if draw(st.booleans()):
        return first, draw(NAMES)
    at = draw(st.integers(0, len(first)))
    return first, first[:at] + draw(ANY_CHAR) + first[at + draw(st.integers(0, 1)):]


@fuzz(1)
@given(name=NAMES)
@with_name_examples()
def test_any_name_maps_to_one_safe_directory_inside_out(out_root: Path, name: str) -> None:
    """Safe by the rule, at most 255 bytes, and a direct child of OUT that the filesystem accepts."""
    dir_name = segment_dir_name(name)
    assert is_safe_name(dir_name)
    assert len(dir_name.encode("utf-8")) <= 255
    path = segment_dir(out_root, name)
    assert path.name == dir_name
    assert path.resolve().parent == out_root.resolve()
    path.mkdir()
    try:
        assert [p.name for p in out_root.iterdir()] == [dir_name]
    finally:
        path.rmdir()


@fuzz(1)
@given(pair=name_pairs())
@example(pair=("a/b", "a\nb"))
@example(pair=("a/b", "a_b"))
@example(pair=("a.b", "a/b"))
@example(pair=(".", ".."))
@example(pair=("\ud800", "\ud801"))
@example(pair=("x" * 300, "x" * 301))
def test_different_names_get_different_directories(pair: tuple[str, str]) -> None:
    first, second = pair
    assume(first != second)
    assert segment_dir_name(first) != segment_dir_name(second)


@pytest.mark.slow
@fuzz(2 / 3)
@given(name=SAFE_NAMES)
@example(name=REAL_SEGMENT)
def test_safe_names_are_their_own_directory(out_root: Path, name: str) -> None:
    assert is_safe_name(name)
    assert segment_dir_name(name) == name
    assert segment_dir(out_root, name) == out_root / name


@fuzz(2 / 3)
@given(name=NAMES, limit=st.integers(12, 200))
@with_name_examples(limit=80)
@with_name_examples(limit=12)
def test_printable_is_one_short_printable_line(name: str, limit: int) -> None:
    text = printable(name, limit)
    assert text.isprintable()
    assert 0 < len(text) <= limit


# --- 2. v2 Parquet reader ----------------------------------------------------------------------

V2_ROWS = st.lists(
    st.tuples(
        st.one_of(st.none(), st.sampled_from(["seg", REAL_SEGMENT]), STORABLE_NAMES, st.binary(max_size=8)),
        st.one_of(st.none(), st.integers(START, START + 300_000), st.integers(-(2**63), 2**63 - 1)),
        st.one_of(st.none(), st.sampled_from([int(c) for c in CameraName]), st.integers(-128, 127)),
        st.one_of(st.none(), IMAGE_BYTES),
    ),
    max_size=6,
)


@fuzz(1 / 2)
@given(content=st.one_of(st.binary(max_size=4096), st.binary(max_size=4096).map(lambda b: b"PAR1" + b + b"PAR1")))
@example(content=b"")
@example(content=b"PAR1")
@example(content=b"PAR1PAR1")
def test_v2_readers_on_any_bytes(content: bytes) -> None:
    with scratch() as tmp:
        path = tmp / "x.parquet"
        path.write_bytes(content)
        check_all_readers(path, tmp / "out")


@fuzz(1 / 5)
@given(frames=camera_frames())
def test_v2_valid_files_with_hostile_names_read_back(frames: list[CameraFrame]) -> None:
    """The generator of the mutation test makes readable files, whatever the segment name."""
    assume(len({(f.frame_timestamp_micros, f.camera_name) for f in frames}) == len(frames))
    with scratch() as tmp:
        path = write_camera_image_parquet(tmp / "x.parquet", frames, shuffle_seed=1)
        got = list(iter_frames(str(path)))
        assert got == sorted(frames, key=lambda f: (f.frame_timestamp_micros, f.camera_name))
        assert segment_info(str(path)).segment_context_name == frames[0].segment_context_name
        assert_inside(tmp / "out", got[0].segment_context_name)


@fuzz(1 / 2)
@given(frames=camera_frames(), edits=EDITS, cut=CUTS)
@example(frames=example_frames(REAL_SEGMENT), edits=[("name", 0, 0x80)], cut=None)
def test_v2_readers_on_mutated_valid_files(frames: list[CameraFrame], edits: list[Edit], cut: int | None) -> None:
    with scratch() as tmp:
        valid = write_camera_image_parquet(tmp / "valid.parquet", frames).read_bytes()
        path = tmp / "x.parquet"
        path.write_bytes(mutate(valid, edits, cut, frames[0].segment_context_name))
        check_all_readers(path, tmp / "out")


@fuzz(1 / 2)
@given(rows=V2_ROWS)
@example(rows=[("seg", START, 1, with_header_size(tiny_jpeg(), 20000, 20000))])
@example(rows=[("a", START, 1, tiny_jpeg()), ("b\nc", START, 2, tiny_jpeg())])
@example(rows=[(b"\xff\xfe", START, 1, tiny_jpeg())])
def test_v2_readers_on_well_formed_files_with_any_values(rows: list[V2Row]) -> None:
    """Valid Parquet whose keys and images hold anything: nulls, unknown cameras, bomb headers."""
    with scratch() as tmp:
        check_all_readers(write_v2_rows(tmp / "x.parquet", rows), tmp / "out")


@fuzz(1 / 5)
@given(names=st.lists(STORABLE_NAMES, min_size=2, max_size=4, unique=True))
@example(names=["a", "b\nc"])
def test_v2_refusals_are_one_line(names: list[str]) -> None:
    """A DetectError message is one line for the CLI, even when it quotes hostile names."""
    with scratch() as tmp:
        path = write_v2_rows(tmp / "x.parquet", [(n, START, 1, tiny_jpeg()) for n in names])
        with pytest.raises(DetectError) as refused:
            segment_info(str(path))
        assert "\n" not in str(refused.value) and "\r" not in str(refused.value)


# --- 3. v1 TFRecord reader ---------------------------------------------------------------------

FRAME_RECORDS = st.builds(
    frame_record,
    STORABLE_NAMES,
    st.one_of(st.integers(START, START + 300_000), st.integers(-(2**63), 2**63 - 1)),
    st.lists(
        # A proto2 enum field takes only known values (0-5) when set from Python; mutations do the rest.
        st.tuples(st.integers(0, 5), IMAGE_BYTES),
        max_size=3,
    ),
)


@pytest.mark.slow
@fuzz(1 / 12)
@given(content=st.binary(max_size=4096))
@example(content=b"")
@example(content=b"\x00" * 16)
def test_v1_readers_on_any_bytes(waymo_protos: object, content: bytes) -> None:
    with scratch() as tmp:
        path = tmp / "x.tfrecord"
        path.write_bytes(content)
        check_all_readers(path, tmp / "out")


@pytest.mark.slow
@fuzz(1 / 12)
@given(frames=camera_frames(), edits=EDITS, cut=CUTS)
def test_v1_readers_on_mutated_valid_files(
    waymo_protos: object, frames: list[CameraFrame], edits: list[Edit], cut: int | None,
) -> None:
    """CRCs catch most edits here; `test_v1_readers_on_records_holding_any_bytes` gets past them."""
    with scratch() as tmp:
        valid = write_frames_tfrecord(tmp / "valid.tfrecord", frames).read_bytes()
        path = tmp / "x.tfrecord"
        path.write_bytes(mutate(valid, edits, cut, frames[0].segment_context_name))
        check_all_readers(path, tmp / "out")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def raw_frame_record(name: bytes, camera: int = 1, jpeg: bytes = b"\xff\xd8") -> bytes:
    """A Frame proto encoded by hand, so `context.name` can hold bytes no Python str can (and the
    module imports without Waymo's protos): context (1) {name (1)}, timestamp_micros (2),
    images (4) {name (1), image (2)}."""
    context = b"\x0a" + _varint(len(name)) + name
    image = b"\x08" + _varint(camera) + b"\x12" + _varint(len(jpeg)) + jpeg
    return (b"\x0a" + _varint(len(context)) + context + b"\x10" + _varint(START)
            + b"\x22" + _varint(len(image)) + image)


@pytest.mark.slow
@fuzz(1 / 10)
@given(records=st.lists(
    st.one_of(st.binary(max_size=256), FRAME_RECORDS, FRAME_RECORDS.flatmap(mutations)), min_size=1, max_size=3,
))
@example(records=[raw_frame_record(b"\xff\xfe", jpeg=tiny_jpeg())])
def test_v1_readers_on_records_holding_any_bytes(waymo_protos: object, records: list[bytes]) -> None:
    """Valid TFRecord framing (so the CRCs pass) around any payload: the proto parser is fuzzed."""
    with scratch() as tmp:
        check_all_readers(write_tfrecord(tmp / "x.tfrecord", records), tmp / "out")


# --- 4. the JPEG gate --------------------------------------------------------------------------

JPEG_LIKE = st.one_of(
    st.binary(max_size=2048),
    st.binary(max_size=2048).map(lambda b: b"\xff\xd8" + b),
    st.builds(tiny_jpeg, st.integers(1, 40), st.integers(1, 40)).flatmap(mutations),
    CLAIMED_SIZE_JPEGS,
)
DECODABLE = st.builds(tiny_jpeg, st.integers(MIN_SIDE, 40), st.integers(MIN_SIDE, 40), st.integers(0, 200))


@fuzz(2 / 3)
@given(jpeg=JPEG_LIKE)
@example(jpeg=b"")
def test_decode_error_on_any_bytes_is_one_line(jpeg: bytes) -> None:
    message = decode_error(jpeg)
    assert isinstance(message, str) and message
    assert "\n" not in message


@fuzz(1 / 2)
@given(width=SIDES, height=SIDES, max_pixels=st.one_of(st.just(DEFAULT_MAX_PIXELS), st.integers(1, 2**28)))
@example(width=13000, height=13000, max_pixels=DEFAULT_MAX_PIXELS)
def test_decode_error_never_decodes_a_refused_header_size(width: int, height: int, max_pixels: int) -> None:
    """A header claiming a refused size gets `check_size`'s reason, and decode_jpeg is never called."""
    tf = import_tensorflow()
    refused = check_size(width, height, max_pixels)
    with mock.patch.object(tf.io, "decode_jpeg", wraps=tf.io.decode_jpeg) as decoder:
        message = decode_error(with_header_size(tiny_jpeg(), width, height), max_pixels)
    assert isinstance(message, str) and "\n" not in message
    if refused is not None:
        assert not decoder.called
        if 0 < width <= LIBJPEG_MAX_SIDE and 0 < height <= LIBJPEG_MAX_SIDE:
            assert message == refused


def test_decode_error_names_the_limit_for_a_13000_square_header() -> None:
    message = decode_error(with_header_size(tiny_jpeg(), 13000, 13000))
    assert "13000x13000" in message and "over the limit" in message and "not decoded" in message


@fuzz(1)
@given(width=st.integers(0, 2**20), height=st.integers(0, 2**20), max_pixels=st.integers(1, 2**30))
def test_check_size_refuses_exactly_the_sizes_outside_the_limits(width: int, height: int, max_pixels: int) -> None:
    allowed = width * height <= max_pixels and min(width, height) >= MIN_SIDE and max(width, height) <= MAX_SIDE
    assert (check_size(width, height, max_pixels) is None) == allowed


@pytest.mark.slow
@fuzz(1 / 25)
@given(items=st.lists(st.one_of(DECODABLE.map(lambda j: (True, j)), JPEG_LIKE.map(lambda j: (False, j))), max_size=5))
def test_decode_stream_keeps_the_good_images_and_drops_the_rest(items: list[tuple[bool, bytes]]) -> None:
    decoded = list(decode_stream(enumerate(j for _, j in items), input_size=(32, 32), keep_full=True))
    indices = [d.index for d in decoded]
    assert indices == sorted(set(indices))
    assert {i for i, (good, _) in enumerate(items) if good} <= set(indices) <= set(range(len(items)))
    for image in decoded:
        assert check_size(image.width, image.height) is None
        assert image.full is not None and image.full.shape == (image.height, image.width, 3)
        assert image.model_input.shape == (32, 32, 3)


# --- 5. the model adapter ----------------------------------------------------------------------

NUM_DETECTIONS = st.one_of(st.floats(), st.integers(-3, 20).map(float))
THRESHOLDS = st.one_of(st.just(0.0), st.floats(-1, 2), st.floats(allow_nan=False))
CLASS_FILTERS = st.one_of(st.none(), st.frozensets(st.integers(-3, 100), max_size=4))
SIZES = st.integers(1, 8192)
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, 1.0, 1.5, 2.0**31, -(2.0**31) - 2**8, 2.0**40]


def float_arrays(dtype: type, shape: tuple[int, ...], unit: bool = False) -> st.SearchStrategy[np.ndarray]:
    """Any floats of `dtype` (NaN, infinities, huge, tiny) with the edge values drawn often."""
    width = 32 if dtype is np.float32 else 64
    elements = st.one_of(st.floats(width=width), st.floats(0, 1, width=width), st.sampled_from(SPECIAL))
    if unit:  # scores a model may emit: [0, 1], or not finite at all
        elements = st.one_of(st.floats(0, 1, width=width), st.sampled_from([math.nan, math.inf, -math.inf]))
    return hnp.arrays(dtype, shape, elements=elements)


@st.composite
def model_rows(draw: st.DrawFn, unit_scores: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's raw outputs: boxes [N, 4], scores [N], classes [N]."""
    n = draw(st.integers(0, 12))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return (
        draw(float_arrays(dtype, (n, 4))),
        draw(float_arrays(dtype, (n,), unit=unit_scores)),
        draw(st.one_of(float_arrays(dtype, (n,)), hnp.arrays(dtype, (n,), elements=st.integers(-3, 100).map(float)))),
    )


def rows_considered(total: int, num_detections: float) -> int:
    """How many leading rows `num_detections` lets through: all of them when it is not finite."""
    return total if not math.isfinite(num_detections) else max(0, min(total, round(num_detections)))


@pytest.mark.slow
@fuzz(2 / 3)
@given(rows=model_rows(), num_detections=NUM_DETECTIONS, width=SIZES, height=SIZES,
       threshold=THRESHOLDS, class_ids=CLASS_FILTERS)
def test_to_detections_boxes_are_finite_and_inside_the_image(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray], num_detections: float, width: int, height: int,
    threshold: float, class_ids: frozenset[int] | None,
) -> None:
    boxes, scores, classes = rows
    det = to_detections(boxes, scores, classes, num_detections, width, height, threshold=threshold, class_ids=class_ids)
    assert isinstance(det, Detections)
    assert det.xyxy.dtype == np.float32 and det.xyxy.shape == (len(det), 4)
    assert np.isfinite(det.xyxy).all()
    xmin, ymin, xmax, ymax = det.xyxy.T
    assert (xmin >= 0).all() and (xmax <= width).all() and (ymin >= 0).all() and (ymax <= height).all()
    assert (xmin <= xmax).all() and (ymin <= ymax).all()
    with np.errstate(over="ignore"):  # a huge threshold overflows to inf in float32, as in the library
        assert np.isfinite(det.scores).all() and (det.scores >= threshold).all()
    assert (np.diff(det.scores) <= 0).all()
    assert det.class_ids.dtype == np.int32 and len(det.labels) == len(det)
    if class_ids is not None:
        assert set(det.class_ids.tolist()) <= class_ids
    assert 0 <= det.invalid <= rows_considered(len(scores), num_detections)


# xmin and xmax one float32 step apart: different normalized, equal once multiplied by the width.
ONE_ULP_WIDE = np.array([[0.1, 0.8132702, 0.5, np.nextafter(np.float32(0.8132702), np.float32(1))]], np.float32)


@pytest.mark.slow
@fuzz(2 / 3)
@given(rows=model_rows(), num_detections=NUM_DETECTIONS, width=SIZES, height=SIZES)
@example(rows=(ONE_ULP_WIDE, np.array([0.9], np.float32), np.array([1.0], np.float32)),
         num_detections=1.0, width=3, height=480)
def test_to_detections_boxes_have_positive_area(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray], num_detections: float, width: int, height: int,
) -> None:
    """Every kept box has xmin < xmax and ymin < ymax in pixels, strictly."""
    boxes, scores, classes = rows
    det = to_detections(boxes, scores, classes, num_detections, width, height, threshold=-math.inf)
    xmin, ymin, xmax, ymax = det.xyxy.T
    assert (xmin < xmax).all() and (ymin < ymax).all()


@pytest.mark.slow
@fuzz(2 / 3)
@given(rows=model_rows(), num_detections=NUM_DETECTIONS)
@example(rows=(np.array([[0.1, 0.1, 0.5, 0.5]]), np.array([0.9]), np.array([2.0**40])), num_detections=1.0)
def test_to_detections_class_ids_are_the_models_classes_rounded(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray], num_detections: float,
) -> None:
    """A kept row's class id is its float class rounded, not a wrapped-around int32."""
    boxes, scores, classes = rows
    det = to_detections(boxes, scores, classes, num_detections, 640, 480, threshold=-math.inf)
    considered = np.rint(classes[: rows_considered(len(scores), num_detections)].astype(np.float64))
    assert set(det.class_ids.tolist()) <= set(considered.tolist())


@pytest.mark.slow
@fuzz(2 / 3)
@given(rows=model_rows(unit_scores=True), num_detections=NUM_DETECTIONS, width=SIZES, height=SIZES)
def test_to_detections_accounts_for_every_row(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray], num_detections: float, width: int, height: int,
) -> None:
    """At threshold 0, every considered row is either kept or counted invalid."""
    boxes, scores, classes = rows
    det = to_detections(boxes, scores, classes, num_detections, width, height, threshold=0.0)
    assert det.invalid + len(det) == rows_considered(len(scores), num_detections)
