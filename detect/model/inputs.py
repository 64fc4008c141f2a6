"""Parallel JPEG decode (and resize for the model) in tf.data, prefetched ahead of the detector."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from detect.core import json_fields as jf
from detect.core.errors import RecordError, UsageError
from detect.core.signals import deferred_interrupts
from detect.core.tf_env import import_tensorflow, tf_error_text
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE, check_size

FIT_MULTIPLE = 32  # the sides a `fit:` size rounds to (the TF.js networks run at multiples of 32)


@dataclasses.dataclass(frozen=True)
class FitSize:
    """`--input-size fit:WxH`: each image scaled to fit inside W x H keeping its aspect ratio, its
    sides then rounded to multiples of 32, so each camera size gets its own shape (Waymo's 1920x1280
    cameras 960x640, its 1920x886 side cameras 960x448 rather than stretched to 960x640)."""

    width: int
    height: int

    def for_image(self, width: int, height: int) -> tuple[int, int]:
        """The (width, height) an image of this size is resized to."""
        scale = min(self.width / width, self.height / height)
        return (max(FIT_MULTIPLE, round(width * scale / FIT_MULTIPLE) * FIT_MULTIPLE),
                max(FIT_MULTIPLE, round(height * scale / FIT_MULTIPLE) * FIT_MULTIPLE))

    def __str__(self) -> str:
        return f"fit:{self.width}x{self.height}"


# (width, height) frames are resized to before the model, a per-image fit, or None for full frames.
InputSize = tuple[int, int] | FitSize | None



@dataclasses.dataclass(frozen=True, eq=False)
class DecodedImage:
    """One camera image decoded: the full frame for drawing (if wanted) and the model's input, both
    read-only views of the decoder's buffers (copy before drawing on them)."""

    index: int
    width: int
    height: int
    full: np.ndarray | None
    model_input: np.ndarray


def parse_input_size(text: str) -> InputSize:
    """'320' -> (320, 320); '640x384' -> (640, 384) as width x height; 'fit:960x640' -> `FitSize`;
    'native' -> None. Sizes are ASCII digits only: Python's `int` also takes '３２０', '3_2_0', '+320'
    and ' 320 ', which a typo or a pasted value should not turn into a run at 320."""
    problem = input_size_problem(text)
    if problem is not None:
        raise UsageError(f"input size {text!r}: {problem}")
    value = text.lower()
    if value in ("native", "full", "none"):
        return None
    if value.startswith("fit:"):
        width, height = _sides(value[4:])
        return FitSize(width, height)
    return _sides(value)


def input_size_problem(text: str) -> str | None:
    """What is wrong with an --input-size value (None: nothing), for `parse_input_size` and the sidecar."""
    value = text.lower()
    if value in ("native", "full", "none"):
        return None
    fit = value.startswith("fit:")
    sides = _SIZE.fullmatch(value[4:] if fit else value)
    if sides is None:
        return ("expected fit:WxH, e.g. fit:960x640" if fit
                else "expected N, WxH, fit:WxH (32-4096 pixels, digits 0-9) or 'native'")
    width, height = _sides(sides.group(0))
    if min(width, height) < 32 or max(width, height) > 4096:
        return f"expected {'fit:WxH' if fit else 'N, WxH or fit:WxH'} of 32-4096 pixels a side"
    if fit and (width % FIT_MULTIPLE or height % FIT_MULTIPLE):
        # every image's sides are rounded to multiples of 32 (`FitSize.for_image`): the bound itself
        # must be one, or the model would run at a size neither asked for nor within it (fit:50x50: 64x64)
        low = [max(FIT_MULTIPLE, side // FIT_MULTIPLE * FIT_MULTIPLE) for side in (width, height)]
        high = [-(-side // FIT_MULTIPLE) * FIT_MULTIPLE for side in (width, height)]
        return (f"a fit size is {FIT_MULTIPLE}-pixel multiples a side (each image is resized to them); "
                f"nearest: fit:{low[0]}x{low[1]}, fit:{high[0]}x{high[1]}")
    return None


_SIZE = re.compile(r"[0-9]{1,5}(x[0-9]{1,5})?")


def _sides(value: str) -> tuple[int, int]:
    """'320' -> (320, 320), '640x384' -> (640, 384): a value `_SIZE` matched."""
    parts = [int(p) for p in value.split("x")]
    return (parts[0], parts[-1])


def require_multiple(size: InputSize, multiple: int, model: str) -> None:
    """Refuse (one line, `UsageError`) a WxH whose sides are not multiples of `multiple`, naming the
    nearest valid sizes: a network that runs at any multiple of 32 (the TF.js heads) would otherwise
    pad the frame, and the user would not be running the size they asked for."""
    if size is None:
        return
    width, height = (size.width, size.height) if isinstance(size, FitSize) else size
    if width % multiple == 0 and height % multiple == 0:
        return
    low = [max(multiple, side // multiple * multiple) for side in (width, height)]
    high = [-(-side // multiple) * multiple for side in (width, height)]
    nearest = [f"{w}x{h}" for w, h in sorted({(low[0], low[1]), (high[0], high[1]), (low[0], high[1]),
                                              (high[0], low[1])}, key=lambda s: (abs(s[0] - width) + abs(s[1] - height), s))]
    raise UsageError(f"input size {width}x{height}: {model} runs at multiples of {multiple} a side; "
                     f"nearest valid sizes: {', '.join(nearest[:2])}")


def decode_stream(
    items: Iterable[tuple[int, bytes]],
    *,
    input_size: InputSize,
    keep_full: bool,
    parallel: int = 2,
    prefetch: int = 8,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> Iterator[DecodedImage]:
    """Decode `(index, jpeg)` items in parallel, in order. Undecodable images, and images whose
    header size `check_size` refuses, are dropped (the caller sees the gap in `index` and asks
    `decode_error` why); the run goes on. The calling thread's work in TensorFlow (building the
    pipeline, each `next`) defers Ctrl-C to its end: TensorFlow can swallow it (`detect.core.signals`).
    """
    images = _decoded_images(items, input_size=input_size, keep_full=keep_full, parallel=parallel,
                             prefetch=prefetch, max_pixels=max_pixels)
    while True:
        with deferred_interrupts():
            image = next(images, None)
        if image is None:
            return
        yield image


def _decoded_images(items: Iterable[tuple[int, bytes]], *, input_size: InputSize, keep_full: bool, parallel: int,
                    prefetch: int, max_pixels: int) -> Iterator[DecodedImage]:
    tf = import_tensorflow()
    producer_error: list[BaseException] = []
    lock = threading.Lock()

    def generate() -> Iterator[tuple[int, bytes]]:
        try:
            yield from items
        except BaseException as err:  # re-raised in the consumer: a reader error must not vanish
            with lock:
                producer_error.append(err)

    def decode(index: Any, jpeg: Any) -> tuple[Any, ...]:  # graph tensors
        header = tf.cast(tf.io.extract_jpeg_shape(jpeg), tf.int64)  # the header only, no pixels
        height, width = header[0], header[1]
        size_ok = tf.logical_and(
            height * width <= max_pixels,
            tf.logical_and(tf.minimum(height, width) >= MIN_SIDE, tf.maximum(height, width) <= MAX_SIDE),
        )
        with tf.control_dependencies([tf.debugging.Assert(size_ok, [height, width])]):
            image = tf.io.decode_jpeg(jpeg, channels=3, dct_method="INTEGER_FAST")
        shape = tf.shape(image)
        if input_size is None:
            model_input = tf.zeros((0, 0, 3), tf.uint8) if keep_full else image  # the full frame is both
        else:
            if isinstance(input_size, FitSize):
                scale = tf.minimum(input_size.width / tf.cast(shape[1], tf.float32),
                                   input_size.height / tf.cast(shape[0], tf.float32))
                target = tf.cast(tf.round(tf.cast(shape[:2], tf.float32) * scale / FIT_MULTIPLE), tf.int32)
                target = tf.maximum(target, 1) * FIT_MULTIPLE  # (height, width); as FitSize.for_image
            else:
                width, height = input_size
                target = tf.constant([height, width])
            model_input = _resized(tf, image, target)
        full = image if keep_full else tf.zeros((0, 0, 3), tf.uint8)
        return index, shape[1], shape[0], full, model_input

    dataset = tf.data.Dataset.from_generator(
        generate,
        output_signature=(tf.TensorSpec((), tf.int64), tf.TensorSpec((), tf.string)),
    )
    dataset = (
        dataset.map(decode, num_parallel_calls=parallel, deterministic=True)
        .ignore_errors()
        .prefetch(prefetch)
    )
    options = tf.data.Options()
    options.threading.private_threadpool_size = max(1, parallel)
    # Parallelism and prefetch depth are set explicitly above. With autotuning on, tearing the
    # iterator down while the model had been busy stalled for 5-7 s in about half the runs here
    # (the autotuner's background loop), once per segment.
    options.autotune.enabled = False
    dataset = dataset.with_options(options)
    share = input_size is None and keep_full  # the full frame is the model's input too
    for index, width, height, full, model_input in dataset:
        full_array = _view(full) if keep_full else None
        yield DecodedImage(
            index=int(index),
            width=int(width),
            height=int(height),
            full=full_array,
            model_input=full_array if share and full_array is not None else _view(model_input),
        )
    with lock:
        if producer_error:
            raise producer_error[0]


def _view(tensor: Any) -> np.ndarray:
    """A read-only array over the tensor's own buffer (it stays alive with the array): no copy out
    of TensorFlow, where `.numpy()` copies (a 1920x1280 frame: 7 MB, 1-2 ms of the main thread, which
    the render processes' shared-memory slot copies again anyway). Who draws on it copies it first."""
    return np.asarray(memoryview(tensor))


def decode_error(jpeg: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> str:
    """Why `decode_stream` dropped this image, as one line (for the manifest); never decodes an
    image whose header size is refused."""
    if not jpeg:
        return "empty image bytes"
    with deferred_interrupts():
        return _decode_error(jpeg, max_pixels)


def _decode_error(jpeg: bytes, max_pixels: int) -> str:
    tf = import_tensorflow()
    try:
        height, width = (int(v) for v in tf.io.extract_jpeg_shape(jpeg).numpy()[:2])
    except (tf.errors.OpError, ValueError) as err:
        return f"cannot decode JPEG: {tf_error_text(err)}"
    refused = check_size(width, height, max_pixels)
    if refused:
        return refused
    try:
        tf.io.decode_jpeg(jpeg, channels=3)
    except (tf.errors.OpError, ValueError) as err:
        return f"cannot decode JPEG: {tf_error_text(err)}"
    return "cannot decode JPEG"


def size_record(size: InputSize) -> list[int] | str:
    """How a manifest records an input size: [width, height], 'fit:WxH' or 'native'."""
    return "native" if size is None else str(size) if isinstance(size, FitSize) else list(size)


MIN_INPUT_SIDE, MAX_INPUT_SIDE = 32, 4096  # `--input-size`'s bounds
_FIT_RECORD = re.compile(r"fit:([0-9]{1,4})x([0-9]{1,4})")


def size_from_record(value: object, field: str) -> InputSize:
    """The input size `size_record` recorded (`RecordError` naming `field` when it is not one)."""
    if value == "native":
        return None
    fit = _FIT_RECORD.fullmatch(value) if isinstance(value, str) else None
    if fit is not None:
        sides: list[object] = [int(fit.group(1)), int(fit.group(2))]
    elif isinstance(value, list) and len(value) == 2:
        sides = list(value)
    else:
        raise RecordError(f"{field}: expected [width, height], 'fit:WxH' or 'native', got {value!r:.40}")
    width, height = (jf.whole(side, field, MIN_INPUT_SIDE, MAX_INPUT_SIDE) for side in sides)
    return FitSize(width, height) if fit is not None else (width, height)


def resize_images(images: np.ndarray, size: tuple[int, int] | FitSize) -> np.ndarray:
    """uint8 `[B, H, W, 3]` resized to `size` (width, height) exactly as `decode_stream` resizes a
    frame for the model: tiles and whole frames cut out of a full frame reach the model as a resized
    frame would."""
    tf = import_tensorflow()
    width, height = size.for_image(images.shape[2], images.shape[1]) if isinstance(size, FitSize) else size
    with deferred_interrupts():
        return _resized(tf, tf.convert_to_tensor(images), tf.constant([height, width])).numpy()


def _resized(tf: Any, images: Any, target: Any) -> Any:
    """uint8 images resized to `target` (height, width) for the model: bilinear with antialiasing
    (a triangle filter as wide as the scale when shrinking, as Pillow's resize; plain bilinear when
    enlarging), rounded. Without it a shrink by a factor other than 2 samples 2 of every 3-4 pixels
    (the side cameras' 886 rows to 448, MOT17's 1080 to 544). Measured with `detect.tools.sweep` on
    the real frame at fit:960x640: VEHICLE AP50 0.389 -> 0.374 (under one of its 50 labels),
    PEDESTRIAN 0.513 both, the one cyclist's box IoU 0.48 -> 0.58 (found); MOT17 PEDESTRIAN 0.476 ->
    0.474 (docs/models.md)."""
    resized = tf.image.resize(images, target, method="bilinear", antialias=True)
    return tf.saturate_cast(tf.round(resized), tf.uint8)
