"""Full camera frames decoded for drawing without TensorFlow: what `detect redraw` draws on.

A run decodes each JPEG once, in tf.data (`decode_stream`), with libjpeg-turbo's fast integer IDCT
(`dct_method="INTEGER_FAST"`) and fancy upsampling, and draws on those pixels. simplejpeg is the
same libjpeg-turbo with the same two choices (`fastdct=True, fastupsample=False`): its pixels are
TensorFlow's byte for byte (a test checks it on the real frame and on a grayscale JPEG), so a
redraw writes the bytes a fresh run writes without importing TensorFlow (2.3 s) or starting tf.data
for the decode. It releases the GIL: `threads` decode side by side.

An image the run could decode but simplejpeg cannot (a JPEG flavour it refuses) falls back to
TensorFlow's decode, so the pixels never depend on which decoder took the image.
"""

from __future__ import annotations

import collections
import concurrent.futures
from collections.abc import Iterable, Iterator

import numpy as np
import simplejpeg

from detect.core.tf_env import import_tensorflow
from detect.model.inputs import DecodedImage
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE

_NO_MODEL_INPUT = np.zeros((0, 0, 3), np.uint8)


def decode_full_frames(items: Iterable[tuple[int, bytes]], *, threads: int = 2,
                       max_pixels: int = DEFAULT_MAX_PIXELS) -> Iterator[DecodedImage]:
    """`(index, jpeg)` items -> full frames (no model input), in order, `threads` at a time.
    Images the run would have refused (header size, as `decode_stream` checks it) or that do not
    decode are dropped: the caller sees the gap in `index`, as with `decode_stream`."""
    threads = max(1, threads)
    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="detect-decode") as pool:
        window: collections.deque[concurrent.futures.Future[DecodedImage | None]] = collections.deque()
        for index, jpeg in items:
            window.append(pool.submit(decode_full_frame, index, jpeg, max_pixels))
            while len(window) > 2 * threads:
                if (done := window.popleft().result()) is not None:
                    yield done
        while window:
            if (done := window.popleft().result()) is not None:
                yield done


def decode_full_frame(index: int, jpeg: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> DecodedImage | None:
    """One JPEG as RGB uint8 `[H, W, 3]` with TensorFlow's pixels; None when it is refused or broken."""
    try:
        height, width, _colorspace, _subsampling = simplejpeg.decode_jpeg_header(jpeg)
    except (ValueError, TypeError):
        height = width = None
    if height is not None and width is not None and not _size_ok(int(height), int(width), max_pixels):
        return None
    try:
        image = simplejpeg.decode_jpeg(jpeg, colorspace="RGB", fastdct=True, fastupsample=False)
    except (ValueError, TypeError):
        image = _tensorflow_decode(jpeg, max_pixels)
        if image is None:
            return None
    return DecodedImage(index, int(image.shape[1]), int(image.shape[0]), np.ascontiguousarray(image), _NO_MODEL_INPUT)


def _size_ok(height: int, width: int, max_pixels: int) -> bool:
    return height * width <= max_pixels and min(height, width) >= MIN_SIDE and max(height, width) <= MAX_SIDE


def _tensorflow_decode(jpeg: bytes, max_pixels: int) -> np.ndarray | None:
    """The run's own decode, for the rare JPEG simplejpeg refuses."""
    tf = import_tensorflow()
    try:
        height, width = (int(v) for v in tf.io.extract_jpeg_shape(jpeg).numpy()[:2])
        if not _size_ok(height, width, max_pixels):
            return None
        return np.array(tf.io.decode_jpeg(jpeg, channels=3, dct_method="INTEGER_FAST").numpy())
    except (tf.errors.InvalidArgumentError, ValueError):
        return None
