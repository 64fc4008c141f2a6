"""Where frames are drawn and encoded: render threads, or render processes fed through shared memory.

Drawing, fpng (the fastest lossless PNG encoder here, ~15 ms a 1920x1280 frame), Pillow's JPEG
encoder and the GIF quantizer all hold Python's GIL, so render *threads* never use more than about
one core however many there are. GIL-free encoders exist (ISA-L deflate behind a numpy PNG filter
scales 1.9x on 2 threads) but cost 1.6-2x fpng's CPU, so a frame would get dearer everywhere.
Render *processes* keep the cheap encoders and scale with the cores: each worker process gets the
decoded frame through a shared-memory slot (frames are never pickled; only the key, the boxes and
the small animation frame cross the pipe), draws on it in place, writes it, and hands back the
animation frame. Both paths run `render_pixels`, so they write the same bytes.

`--render auto` (the default) picks processes when there are two or more workers, and one thread
otherwise: one worker gains nothing from a process and would pay the frame copy.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Mapping
from multiprocessing import shared_memory
from pathlib import Path
from typing import Any

import numpy as np

from detect.core.errors import OutputError
from detect.core.records import Detections, FrameKey, FrameResult, Labels
from detect.engine import shm
from detect.engine.spec import SegmentJob, SegmentSettings
from detect.engine.stages import Rendered, StageTimings, render_frame, render_pixels
from detect.engine.tuning import keep_freed_memory, lower_thread_priority
from detect.model.inputs import DecodedImage
from detect.results.animations import AnimationFrame

# Slots per worker: one frame being drawn, one waiting, so a worker never idles on the copy.
SLOTS_PER_WORKER = 2
# Slots grow in steps of this many bytes, so 1920x886 and 1920x1280 frames share one size.
SLOT_GRANULE = 4 << 20
SHM_DIR = shm.SHM_DIR


class Renderer:
    """What the pipeline submits frames to; `submit` returns a future of the `Rendered` frame."""

    # For other per-frame work that can run beside the frames (the mosaic frames); picklable calls only.
    executor: concurrent.futures.Executor

    def submit(self, decoded: DecodedImage, key: FrameKey, detections: Detections,
               labels: Labels | None, trails: Mapping[int, np.ndarray] | None = None) -> concurrent.futures.Future[Rendered]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_renderer(segment_dir: Path, job: SegmentJob, timings: StageTimings) -> Renderer:
    """The renderer the settings' `render` and `workers` ask for."""
    if _in_processes(job.settings):
        return ProcessRenderer(segment_dir, job, timings)
    return ThreadRenderer(segment_dir, job, timings)


def _in_processes(settings: SegmentSettings) -> bool:
    return settings.render_mode == "processes" and settings.needs_full_frames


class ThreadRenderer(Renderer):
    """Render threads at a lower priority (see `detect.engine.tuning`)."""

    def __init__(self, segment_dir: Path, job: SegmentJob, timings: StageTimings) -> None:
        self.segment_dir, self.job, self.timings = segment_dir, job, timings
        self._pool = concurrent.futures.ThreadPoolExecutor(job.settings.workers, thread_name_prefix="detect-render",
                                                           initializer=lower_thread_priority)
        self.executor = self._pool

    def submit(self, decoded: DecodedImage, key: FrameKey, detections: Detections,
               labels: Labels | None, trails: Mapping[int, np.ndarray] | None = None) -> concurrent.futures.Future[Rendered]:
        return self._pool.submit(render_frame, decoded, key, detections, self.segment_dir, self.job,
                                 self.timings, labels, trails)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class WorkerDied(OutputError):
    """A render process ended abruptly (killed, out of memory, crashed)."""


class ProcessRenderer(Renderer):
    """Render processes (a pool shared by every segment of this run) fed through shared memory."""

    def __init__(self, segment_dir: Path, job: SegmentJob, timings: StageTimings) -> None:
        # absolute: the pool outlives this run, and its processes kept the working directory they started in
        self.segment_dir, self.job, self.timings = segment_dir.absolute(), job, timings
        self.workers = job.settings.workers
        self._pool = self.executor = process_pool(self.workers)
        self._slots = frame_slots(self.workers)
        self._inflight: set[concurrent.futures.Future[Any]] = set()
        self._lock = threading.Lock()

    def submit(self, decoded: DecodedImage, key: FrameKey, detections: Detections,
               labels: Labels | None, trails: Mapping[int, np.ndarray] | None = None) -> concurrent.futures.Future[Rendered]:
        result = FrameResult(key, decoded.width, decoded.height, detections)
        if decoded.full is None:
            raise ValueError(f"{key}: the full frame was not kept, so it cannot be drawn")
        slot = self._slots.put(decoded.full)
        outer: concurrent.futures.Future[Rendered] = concurrent.futures.Future()
        try:
            inner = self._pool.submit(render_in_worker, slot.name, decoded.full.shape, key, detections,
                                      self.segment_dir, self.job, labels, trails)
        except concurrent.futures.process.BrokenProcessPool as err:
            self._slots.release(slot)
            discard_pool(self.workers)
            raise WorkerDied(_died_text()) from err

        with self._lock:
            self._inflight.add(inner)

        def done(future: concurrent.futures.Future[tuple[AnimationFrame | None, dict[str, float]]]) -> None:
            with self._lock:
                self._inflight.discard(future)
            self._slots.release(slot)
            try:
                animation, seconds = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                discard_pool(self.workers)
                outer.set_exception(WorkerDied(_died_text()))
            except BaseException as err:
                outer.set_exception(err)
            else:
                for stage, value in seconds.items():
                    self.timings.add(stage, value)
                outer.set_result(Rendered(result, animation))

        inner.add_done_callback(done)
        return outer

    def close(self) -> None:
        """Cancel what has not started and wait for the rest (after an error or an interrupt; in a
        normal run the ordered consumer has already waited for every frame): no worker may still
        write into the segment once it is closed."""
        with self._lock:
            inflight = list(self._inflight)
        for future in inflight:
            future.cancel()
        concurrent.futures.wait(inflight)


def _died_text() -> str:
    return ("a render process ended abruptly (killed or out of memory?); the frames it held are not written: "
            "rerun with --resume (in `detect run`: --retry-failed), or with --render threads")


# ---- the slots ---------------------------------------------------------------------------------


class FrameSlots:
    """A fixed number of shared-memory blocks that frames are copied into for the render processes.

    `put` blocks while every slot is in use (the render processes set the pace); a slot too small
    for a frame is replaced by a larger one under a new name.
    """

    def __init__(self, count: int) -> None:
        self._free: list[shared_memory.SharedMemory | None] = [None] * count
        self._live: dict[str, shared_memory.SharedMemory] = {}  # every slot not yet unlinked, in use or free
        self._cond = threading.Condition()
        self._closed = False

    def put(self, frame: np.ndarray) -> shared_memory.SharedMemory:
        with self._cond:
            while not self._free:
                if self._closed:
                    raise RuntimeError("frame slots are closed")
                self._cond.wait()
            slot = self._free.pop()
        try:
            if slot is None or slot.size < frame.nbytes:
                if slot is not None:
                    self._drop(slot)
                slot = self._create(frame.nbytes)
            np.copyto(np.ndarray(frame.shape, np.uint8, buffer=slot.buf), frame, casting="no")
        except BaseException:
            with self._cond:
                self._free.append(slot)
                self._cond.notify()
            raise
        return slot

    def release(self, slot: shared_memory.SharedMemory) -> None:
        with self._cond:
            if self._closed:
                self._drop(slot)
            else:
                self._free.append(slot)
                self._cond.notify()

    def close(self, in_use_too: bool = False) -> None:
        """Unlink every slot not in use (a slot still in use goes when it is released); with
        `in_use_too` (the render processes are gone: an interrupted run's frames will never be
        released), every slot."""
        with self._cond:
            self._closed = True
            free, self._free = self._free, []
            self._cond.notify_all()
            held = list(self._live.values()) if in_use_too else []
        for slot in [*free, *held]:
            if slot is not None:
                self._drop(slot)

    def _create(self, nbytes: int) -> shared_memory.SharedMemory:
        size = -(-nbytes // SLOT_GRANULE) * SLOT_GRANULE
        check_shm_room(size)
        try:
            slot = shared_memory.SharedMemory(name=shm.slot_name(), create=True, size=size)
        except OSError as err:
            raise OutputError(f"cannot create a {size >> 20} MB shared-memory frame slot: {err.strerror or err}; "
                              f"use --render threads") from err
        with self._cond:
            self._live[slot.name] = slot
        return slot

    def _drop(self, slot: shared_memory.SharedMemory) -> None:
        with self._cond:
            if self._live.pop(slot.name, None) is None:
                return  # already unlinked
        with contextlib.suppress(OSError, BufferError):
            slot.close()
        with contextlib.suppress(OSError):
            slot.unlink()


def check_shm_room(nbytes: int, directory: Path = SHM_DIR) -> None:
    """Refuse a slot that /dev/shm has no room for: writing past a full tmpfs kills the process
    (SIGBUS) instead of raising. Docker gives containers 64 MB unless `--shm-size` says more."""
    try:
        stats = os.statvfs(directory)
    except OSError:  # no /dev/shm (macOS, Windows): the OS sizes shared memory itself
        return
    free = stats.f_bavail * stats.f_frsize
    if free < 2 * nbytes:
        raise OutputError(f"{directory} has {free >> 20} MB free, too little for render processes "
                          f"(~{nbytes >> 20} MB a frame slot): use --render threads or fewer --workers, "
                          f"or give the container more shared memory (docker run --shm-size=1g)")


# ---- the worker processes ----------------------------------------------------------------------

_pools: dict[int, concurrent.futures.ProcessPoolExecutor] = {}
_slots: dict[int, FrameSlots] = {}
_pools_lock = threading.Lock()


def process_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """One pool per worker count for the whole run (starting processes costs ~0.5 s each)."""
    shm.sweep_stale()  # slots and semaphores of runs killed outright (a listing of /dev/shm: cheap)
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None:
            shm.name_semaphores()
            # spawn, never fork: the parent runs TensorFlow's threads, and forking them deadlocks.
            context = multiprocessing.get_context("spawn")
            pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context, initializer=init_worker)
            if not _pools and not _slots:
                atexit.register(shutdown_pools)
            _pools[workers] = pool
        return pool


def start_processes(settings: SegmentSettings) -> None:
    """When `open_renderer` will draw in processes, start them now without waiting, so their
    start-up (~0.4 s of imports each) overlaps what the caller prepares before its first frame."""
    if _in_processes(settings):
        pool = process_pool(settings.workers)
        for _ in range(settings.workers):  # each task finding no idle process starts one
            pool.submit(os.getpid)


def frame_slots(workers: int) -> FrameSlots:
    """The slots that feed the pool of `workers`, shared by every segment of the run: the workers
    keep them mapped, so a new set per segment would pile up in their memory."""
    with _pools_lock:
        slots = _slots.get(workers)
        if slots is None:
            slots = _slots[workers] = FrameSlots(SLOTS_PER_WORKER * workers)
        return slots


def shutdown_pools() -> None:
    """Stop every render process and unlink the slots (at exit: a pool left to the garbage
    collector complains, and a slot left linked would outlive the run)."""
    with _pools_lock:
        pools, slots = list(_pools.values()), list(_slots.values())
        _pools.clear()
        _slots.clear()
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)
    for frame_slot_set in slots:
        frame_slot_set.close(in_use_too=True)  # no render process is left to read them


def worker_cpu_seconds() -> float:
    """CPU seconds used so far by the live render processes (Linux; 0 elsewhere): a process's own
    `os.times()` counts children only once they have exited."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    with _pools_lock:
        # The pools' workers are this process's only multiprocessing children.
        pids = [child.pid for child in multiprocessing.active_children() if child.pid is not None] if _pools else []
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def discard_pool(workers: int) -> None:
    """Forget a broken pool; the next segment starts a new one."""
    with _pools_lock:
        pool = _pools.pop(workers, None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def init_worker() -> None:
    """In each render process: Ctrl-C is the parent's to handle, output work yields to the model,
    freed frame buffers stay mapped, and the process ends with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a process group's SIGTERM too: workers end with the parent
    lower_thread_priority()
    keep_freed_memory()
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), name="detect-parent-watch", daemon=True).start()


def _exit_with(parent_sentinel: int) -> None:
    """A parent killed outright (SIGKILL, OOM killer) never shuts the pool down, and an idle worker
    would wait for work forever, holding its slots; once the workers are gone, multiprocessing's
    resource tracker unlinks the slots the parent left."""
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(0)


_attached: dict[str, shared_memory.SharedMemory] = {}
# Slots a worker keeps mapped. A slot replaced by a larger one is unlinked by the parent, and its
# memory is only freed once every worker unmaps it: stale ones are dropped whenever a new one comes.
MAX_ATTACHED = 64


def attach(name: str) -> shared_memory.SharedMemory:
    slot = _attached.get(name)
    if slot is None:
        for old in [n for n in _attached if SHM_DIR.is_dir() and not (SHM_DIR / n).exists()]:
            _close(_attached.pop(old))
        if len(_attached) >= MAX_ATTACHED:
            _close(_attached.pop(next(iter(_attached))))
        slot = _attached[name] = shared_memory.SharedMemory(name=name)
    return slot


def _close(slot: shared_memory.SharedMemory) -> None:
    with contextlib.suppress(OSError, BufferError):
        slot.close()


def render_in_worker(name: str, shape: tuple[int, ...], key: FrameKey, detections: Detections, segment_dir: Path,
                     job: SegmentJob, labels: Labels | None,
                     trails: Mapping[int, np.ndarray] | None = None) -> tuple[AnimationFrame | None, dict[str, float]]:
    """Runs in a render process: the frame in slot `name`, drawn in place, written, prepared."""
    frame = np.ndarray(shape, np.uint8, buffer=attach(name).buf)
    try:
        return render_pixels(frame, key, detections, segment_dir, job, labels, trails)
    finally:
        del frame  # no view may outlive the call: the slot is reused for the next frame

