"""Parallel JPEG decode (and resize for the model) in tf.data, prefetched ahead of the detector."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from detect.core.errors import UsageError
from detect.core.tf_env import import_tensorflow, tf_error_text
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE, check_size

# (width, height) frames are resized to before the model, or None to feed full frames.
InputSize = tuple[int, int] | None



@dataclasses.dataclass(frozen=True, eq=False)
class DecodedImage:
    """One camera image decoded: the full frame for drawing (if wanted) and the model's input."""

    index: int
    width: int
    height: int
    full: np.ndarray | None
    model_input: np.ndarray


def parse_input_size(text: str) -> InputSize:
    """'320' -> (320, 320); '640x384' -> (640, 384) as width x height; 'native' -> None."""
    value = text.strip().lower()
    if value in ("native", "full", "none"):
        return None
    parts = value.split("x")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) == 1:
        numbers = numbers * 2
    if len(numbers) != 2 or min(numbers) < 32 or max(numbers) > 4096:
        raise UsageError(f"input size {text!r}: expected N, WxH (32-4096 pixels) or 'native'")
    return numbers[0], numbers[1]


def require_multiple(size: InputSize, multiple: int, model: str) -> None:
    """Refuse (one line, `UsageError`) a WxH whose sides are not multiples of `multiple`, naming the
    nearest valid sizes: a network that runs at any multiple of 32 (the TF.js heads) would otherwise
    pad the frame, and the user would not be running the size they asked for."""
    if size is None or all(side % multiple == 0 for side in size):
        return
    width, height = size
    low = [max(multiple, side // multiple * multiple) for side in size]
    high = [-(-side // multiple) * multiple for side in size]
    nearest = [f"{w}x{h}" for w, h in sorted({(low[0], low[1]), (high[0], high[1]), (low[0], high[1]),
                                              (high[0], low[1])}, key=lambda s: abs(s[0] - width) + abs(s[1] - height))]
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
    `decode_error` why); the run goes on.
    """
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
            width, height = input_size
            resized = tf.image.resize(image, (height, width), method="bilinear", antialias=False)
            model_input = tf.saturate_cast(tf.round(resized), tf.uint8)
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
    share = input_size is None and keep_full  # one copy out of TensorFlow, not two (~10 ms a 1920x1280 frame)
    for index, width, height, full, model_input in dataset:
        full_array = full.numpy() if keep_full else None
        yield DecodedImage(
            index=int(index),
            width=int(width),
            height=int(height),
            full=full_array,
            model_input=full_array if share and full_array is not None else model_input.numpy(),
        )
    with lock:
        if producer_error:
            raise producer_error[0]


def decode_error(jpeg: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> str:
    """Why `decode_stream` dropped this image, as one line (for the manifest); never decodes an
    image whose header size is refused."""
    tf = import_tensorflow()
    if not jpeg:
        return "empty image bytes"
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


def resize_images(images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 `[B, H, W, 3]` resized to `size` (width, height) exactly as `decode_stream` resizes a
    frame for the model (bilinear, no antialiasing, rounded): tiles and whole frames cut out of a
    full frame reach the model as a resized frame would."""
    tf = import_tensorflow()
    width, height = size
    resized = tf.image.resize(tf.convert_to_tensor(images), (height, width), method="bilinear", antialias=False)
    return tf.saturate_cast(tf.round(resized), tf.uint8).numpy()
