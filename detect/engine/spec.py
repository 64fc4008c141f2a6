"""What a run is asked to do, as frozen, typed values the CLI builds and the engines take.

`SegmentSettings` decides what one segment's outputs look like (`SegmentJob` adds what the engine
derives for a segment it opened); `ModelSpec` which detector and how it is loaded; `RunSpec` the
whole job (inputs, output directory, engine, sharding). Engines never see argparse: the same spec
drives `detect segment`, `detect run` and Python callers.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Literal, TypeVar, cast

from detect.core import json_fields as jf
from detect.core.cameras import CameraName
from detect.core.errors import RecordError, UsageError
from detect.core.matching import PROTOCOLS
from detect.core.records import WaymoType
from detect.judge import ErrorRules
from detect.model.classmap import DEFAULT_MAP_SOURCE, ClassMap, default_class_map, load_class_map
from detect.model.facts import ModelFacts
from detect.model.inputs import InputSize, size_from_record, size_record
from detect.model.tiles import TileSpec
from detect.render.draw import DrawStyle
from detect.render.mosaic import MAX_ANIMATION_WIDTH, MIN_ANIMATION_WIDTH
from detect.results.frames import FRAME_FORMATS
from detect.results.track_ids import tracker_params
from detect.track import TrackerParams
from detect.waymo.images import DEFAULT_MAX_PIXELS, MAX_SIDE, MIN_SIDE
from detect.waymo.selection import FrameFilter

Mode = Literal["new", "resume", "overwrite"]
MODES: tuple[Mode, ...] = ("new", "resume", "overwrite")
# Average precision needs the low-score boxes a drawing threshold cuts: the table keeps every box
# down to this score. 0.05 is where COCO-style evaluations of SSD models stop gaining AP.
DEFAULT_SCORE_FLOOR = 0.05
EngineName = Literal["local", "ray"]
RENDER_MODES = ("auto", "threads", "processes")
ENGINES: tuple[EngineName, ...] = ("local", "ray")
# What the frames show: errors (hits, false alarms, missed labels) where the segment has labels,
# or always (an error without labels), or the detections in their class colors.
DRAW_MODES = ("auto", "errors", "detections")


# `--workers`' bound: 64 drawing threads keep a 64-core box busy. A manifest may record more (the
# default scales with the cores), never more than MAX_THREADS; nor more frames than an int64 counts.
MAX_WORKERS = 64
MAX_THREADS = 1 << 16
MAX_FRAME_INDEX = 2**63 - 1
T = TypeVar("T")


def scaled_threads(small_machine: int) -> int:
    """`small_machine` threads on up to 4 cores, else all cores but two (the model's feeder and
    the ordered consumer)."""
    cores = os.cpu_count() or 1
    return small_machine if cores <= 4 else cores - 2


@dataclasses.dataclass(frozen=True)
class SegmentSettings:
    """What the user asked one segment's outputs to be (the CLI builds this from flags); what the
    engine derives once it opens a segment is beside it, in `SegmentJob`."""

    frame_filter: FrameFilter = FrameFilter()
    input_size: InputSize = (320, 320)
    write_frames: bool = True
    frame_format: str = "png"
    gif: bool = True
    mp4: bool = False
    gif_width: int = 640
    style: DrawStyle = DrawStyle()
    mode: Mode = "new"
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger images (by their header) are skipped, never decoded
    draw_mode: str = "auto"  # see DRAW_MODES; `--gt` asks for "errors"
    ground_truth: str | None = None  # where the labels are when not beside the input (`--gt PATH`)
    class_map: ClassMap = dataclasses.field(default_factory=default_class_map)  # model class -> Waymo type
    protocol: str = "coco"  # the IoU a match needs per type (detect.core.matching.PROTOCOLS)
    tile: TileSpec | None = None  # `--tile SIZE`: the model over full-resolution tiles too (detect.model.tiles)
    track: bool = True  # track ids in detections.parquet when the segment has more than one timestamp
    # Workers that draw and encode frames. Two keep up with a CPU-bound model on a small machine;
    # on a GPU box the outputs are the work, so they scale with the cores.
    workers: int = dataclasses.field(default_factory=lambda: scaled_threads(2))
    # Processes or threads for those workers (`detect.engine.render_pool`); same bytes either way.
    render: str = "auto"
    # One decode thread is plenty beside a CPU-bound model on a small machine (and steals the
    # least from it); on a GPU box decode must scale with the cores.
    decode_threads: int = dataclasses.field(default_factory=lambda: scaled_threads(1))

    def __post_init__(self) -> None:
        for name in ("workers", "decode_threads"):
            if int(getattr(self, name)) < 1:
                raise UsageError(f"{name.replace('_', ' ')} must be at least 1, got {getattr(self, name)}")
        if self.draw_mode not in DRAW_MODES:
            raise UsageError(f"draw mode must be one of {', '.join(DRAW_MODES)}, got {self.draw_mode!r}")
        if self.protocol not in PROTOCOLS:
            raise UsageError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if self.render not in RENDER_MODES:
            raise UsageError(f"render must be one of {', '.join(RENDER_MODES)}, got {self.render!r}")

    @property
    def render_mode(self) -> str:
        """`auto` -> processes for two or more workers (threads would share one GIL), else one thread."""
        if self.render == "auto":
            return "processes" if self.workers >= 2 else "threads"
        return self.render

    @property
    def decode_size(self) -> InputSize:
        """What the decoder resizes frames to: full frames when tiles are cut from them."""
        return None if self.tile is not None else self.input_size

    @property
    def needs_labels(self) -> bool:
        """Errors drawn on request (`--draw errors`, `--gt`): the segment must have labels."""
        return self.draw_mode == "errors"

    @property
    def tracker(self) -> TrackerParams | None:
        """The tracker's parameters (set around the drawing threshold), None with --no-track."""
        return tracker_params(self.style.threshold) if self.track else None

    @property
    def animations(self) -> bool:
        return self.gif or self.mp4

    @property
    def needs_full_frames(self) -> bool:
        return self.write_frames or self.animations

    def resume_key(self, model: ResumeModel, segment: str) -> dict[str, object]:  # JSON, compared key by key
        """What must match for frames of an earlier run to be reused as they are (settings.json),
        as far as it is known before the segment is opened (`SegmentJob.resume_key` adds the rest)."""
        f = self.frame_filter
        return {
            "segment_context_name": segment,
            "model": model.path,
            "score_floor": model.score_floor,
            "classes": list(model.classes) if model.classes is not None else None,
            "nms_iou": model.nms_iou,
            "input_size": size_record(self.input_size),
            "write_frames": self.write_frames,
            "frame_format": self.frame_format,
            "cameras": [c.name for c in f.cameras] if f.cameras else None,
            "tile": None if self.tile is None else self.tile.to_json(),
            "track": self.track,  # its parameters follow draw_threshold
        } | self.drawing_key()

    def drawing_key(self) -> dict[str, object]:
        """The resume key's entries for how the frames are drawn: the style (`draw_*`, its classes
        and palette aside) and the drawing mode (`draw`)."""
        style = {f"draw_{k}": v for k, v in dataclasses.asdict(self.style).items() if k not in ("classes", "palette")}
        return style | {"draw": self.draw_mode}


@dataclasses.dataclass(frozen=True)
class SegmentJob:
    """One segment's work: the settings the user asked for, as asked, and what the engine derived
    for this segment once it opened it (the settings alone hold no engine state)."""

    settings: SegmentSettings
    # How the segment's frames are judged (hit, false alarm, missed label), from its labels and the
    # model's classes (None: the detections alone are drawn).
    rules: ErrorRules | None = None

    @classmethod
    def judged(cls, settings: SegmentSettings, label_types: Collection[int] | None,
               model_classes: tuple[int, ...] | None) -> SegmentJob:
        """The job with the rules that judge a segment's frames, when its frames show errors: it has
        labels, the drawing asks for errors, and the model outputs a Waymo type the labels have.
        `label_types`: the Waymo types among the segment's labels (None: it has none); a type with
        no labels is not scored (its evaluation is left out), so its boxes are drawn as other
        classes, not as false alarms (a stop sign: Waymo's 2D labels have no SIGN).
        `model_classes`: the model facts' `knows_classes` (None: the whole COCO label map)."""
        types = tuple(settings.class_map.types_for(None if model_classes is None else list(model_classes)))
        if label_types is not None:
            types = tuple(t for t in types if t in label_types)
        if settings.draw_mode == "detections" or label_types is None or not types:
            return cls(settings)
        return cls(settings, ErrorRules(settings.class_map, types, PROTOCOLS[settings.protocol]))

    def for_label_types(self, label_types: Collection[int]) -> SegmentJob:
        """This job's rules kept to the types one segment's labels have (`judged` for a job made
        before the segment's labels were read: Ray's render tasks, one job for every segment)."""
        rules = self.rules
        if rules is None:
            return self
        types = tuple(t for t in rules.types if t in label_types)
        return dataclasses.replace(self, rules=dataclasses.replace(rules, types=types) if types else None)

    def resume_key(self, model: ResumeModel, segment: str) -> dict[str, object]:  # JSON, compared key by key
        """The settings' resume key and how the frames were judged (settings.json)."""
        return self.settings.resume_key(model, segment) | self.redrawable_key()

    def redrawable_key(self) -> dict[str, object]:
        """The resume key's entries `detect redraw` changes without the model: how the frames are
        drawn (`SegmentSettings.drawing_key`) and judged (`errors`)."""
        rules = self.rules
        judged = None if rules is None else f"{rules.protocol.name} protocol, {rules.class_map.source}"
        return self.settings.drawing_key() | {"errors": judged}



def recorded_class_map(source: str) -> ClassMap:
    """The class map a record names: the default, or the file at its absolute path (a relative one
    was recorded relative to the folder the run started in, which is not recorded: which file it
    meant cannot be told)."""
    if source == DEFAULT_MAP_SOURCE:
        return default_class_map()
    if not os.path.isabs(source):
        raise RecordError(f"settings.errors.class_map: {source} is a path relative to the folder the run started "
                          f"in, which is not recorded")
    try:
        return load_class_map(Path(source))
    except UsageError as err:  # its message names the flag; here the file is the record's
        raise RecordError(f"settings.errors.class_map: {str(err).removeprefix('--class-map ')}") from None


@dataclasses.dataclass(frozen=True)
class SettingsRecord:
    """A segment's settings as its manifest records them (`settings`): the settings as asked, what
    the model brought (its batch size and score floor) and the Waymo types its frames were judged
    on (none: the detections drawn alone). `to_json` is what the manifest's writers write and
    `from_json` what its readers read: every value checked once, with the bounds its flag has."""

    settings: SegmentSettings
    batch_size: int | None = None
    score_floor: float | None = None
    judged_types: tuple[int, ...] = ()

    @classmethod
    def of(cls, job: SegmentJob, facts: ModelFacts | None = None) -> SettingsRecord:
        return cls(job.settings, None if facts is None else facts.batch_size, None if facts is None else facts.score_floor,
                   () if job.rules is None else tuple(job.rules.types))

    def to_json(self) -> dict[str, object]:
        s, f = self.settings, self.settings.frame_filter
        return {
            "cameras": [c.name for c in f.cameras] if f.cameras else "all",
            "first_frame": f.first_frame, "max_frames": f.max_frames,
            "input_size": size_record(s.input_size),
            "batch_size": self.batch_size,
            "write_frames": s.write_frames, "frame_format": s.frame_format,
            "gif": s.gif, "mp4": s.mp4, "gif_width": s.gif_width,
            "draw": s.style.to_json(),
            "mode": s.mode,
            "workers": s.workers, "decode_threads": s.decode_threads,
            "max_pixels": s.max_pixels,
            "score_floor": self.score_floor,
            "tile": None if s.tile is None else s.tile.to_json(),
            "draw_mode": s.draw_mode,
            # how the frames are judged, and with what (recorded when they are not: the evaluation and the tracker use them)
            "errors": {"protocol": s.protocol, "class_map": s.class_map.source,
                       "types": [WaymoType(t).name for t in self.judged_types]},
        }

    @classmethod
    def from_json(cls, value: object, *, track: bool,
                  class_map: Callable[[str], ClassMap] = recorded_class_map) -> SettingsRecord:
        """The record `to_json` wrote (a key it lacks, in a manifest written before the key
        existed, takes the default); one `RecordError` naming the first value that cannot be used.
        `track`: whether the run tracked (the manifest's `tracking`); `class_map`: the map for
        the source the record names (the default reads the file it names)."""
        f = jf.Fields(jf.section(value, "settings"), "settings")
        judging = jf.Fields(f.get("errors", {}, lambda v, name: jf.optional(v, lambda x: jf.section(x, name)) or {}),
                            "settings.errors")
        whole = _whole_at_most
        try:
            settings = SegmentSettings(
                frame_filter=FrameFilter(cameras=f.get("cameras", None, _cameras),
                                         first_frame=f.get("first_frame", 0, whole(0, MAX_FRAME_INDEX)),
                                         max_frames=f.get("max_frames", None, _optional(whole(1, MAX_FRAME_INDEX)))),
                input_size=f.get("input_size", SegmentSettings.input_size, size_from_record),
                write_frames=f.get("write_frames", True, jf.flag),
                frame_format=f.get("frame_format", "png", lambda v, name: jf.choice(v, name, FRAME_FORMATS)),
                gif=f.get("gif", True, jf.flag), mp4=f.get("mp4", False, jf.flag),
                gif_width=f.get("gif_width", SegmentSettings.gif_width, whole(MIN_ANIMATION_WIDTH, MAX_ANIMATION_WIDTH)),
                style=DrawStyle.from_json(f.data.get("draw", {}), "settings.draw"),
                mode=cast(Mode, f.get("mode", "new", lambda v, name: jf.choice(v, name, MODES))),
                workers=f.get("workers", 1, whole(1, MAX_THREADS)),
                decode_threads=f.get("decode_threads", 1, whole(1, MAX_THREADS)),
                max_pixels=f.get("max_pixels", DEFAULT_MAX_PIXELS, whole(MIN_SIDE * MIN_SIDE, MAX_SIDE * MAX_SIDE)),
                tile=f.get("tile", None, _optional(TileSpec.from_json)),
                draw_mode=f.get("draw_mode", "auto", lambda v, name: jf.choice(v, name, DRAW_MODES)),
                protocol=judging.get("protocol", "coco", lambda v, name: jf.choice(v, name, tuple(PROTOCOLS))),
                class_map=class_map(judging.get("class_map", DEFAULT_MAP_SOURCE, lambda v, name: jf.text(v, name, 4096))),
                track=track)
        except (UsageError, ValueError) as err:  # a value each field allows, refused in combination
            if isinstance(err, RecordError):
                raise
            raise RecordError(f"settings: {err}") from None
        no_types: list[int] = []
        types = judging.get("types", no_types, lambda v, name: [_waymo_type(t, f"{name}[]") for t in jf.items(v, name, 16)])
        return cls(settings, batch_size=f.get("batch_size", None, _optional(whole(1, MAX_THREADS))),
                   score_floor=f.get("score_floor", None, _optional(lambda v, name: jf.number(v, name, 0.0, 1.0))),
                   judged_types=tuple(types))


@dataclasses.dataclass(frozen=True)
class ResumeModel:
    """The model's part of a segment's resume key: known from the flags before the model loads
    (`engine.loading.expected_facts`) and from its facts after (`ModelFacts.resume_model`)."""

    path: str
    score_floor: float | None
    classes: tuple[int, ...] | None
    nms_iou: float | None

    @classmethod
    def of(cls, facts: ModelFacts) -> ResumeModel:
        return cls(facts.path, facts.score_floor, facts.classes, facts.nms_iou)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Which detector, and how to load it. `path` None means the default model
    (`engine.loading.DEFAULT_MODEL_HELP` says which)."""

    path: Path | None = None
    threshold: float = 0.5  # boxes drawn on the frames
    # Boxes kept in detections.parquet (for evaluation, which needs low scores too); at most `threshold`.
    score_floor: float = DEFAULT_SCORE_FLOOR
    classes: tuple[str, ...] | None = None
    strategy: str = "none"
    batch_size: int | None = None  # None: the detector's measured default
    nms_iou: float | None = None  # class-aware NMS after the model at this IoU; None: off
    runtime: str = "auto"  # what runs the model: auto, tensorflow or openvino (detect.model.runtimes)


@dataclasses.dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # attach to this cluster; None starts Ray on this machine
    actors: int | None = None  # detector actors; None: one per GPU, else one per node


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One `detect run` (or `detect segment`, with one input): the whole job, typed."""

    inputs: tuple[str, ...]
    out: Path
    model: ModelSpec = ModelSpec()
    settings: SegmentSettings = SegmentSettings()
    engine: EngineName = "local"
    shard: tuple[int, int] | None = None
    retry_failed: bool = False
    ray: RayOptions = RayOptions()
    debug: bool = False  # verbose logs from TensorFlow and Ray

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"unknown engine {self.engine!r}: expected one of {', '.join(ENGINES)}")
        if self.shard is not None:
            index, count = self.shard
            if count < 1 or not 0 <= index < count:
                raise UsageError(f"--shard {index}/{count}: need 0 <= I < N")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'1/4' -> (1, 4): every 4th segment starting at the second (0-based)."""
    if text is None:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text!r}: need 0 <= I < N")
    return index, count


def _whole_at_most(low: int, high: int) -> Callable[[object, str], int]:
    return lambda value, field: jf.whole(value, field, low, high)


def _optional(decode: Callable[[object, str], T]) -> Callable[[object, str], T | None]:
    return lambda value, field: jf.optional(value, lambda v: decode(v, field))


def _cameras(value: object, field: str) -> tuple[CameraName, ...] | None:
    """"all" (None), or the cameras' names, each once."""
    if value == "all":
        return None
    names = [jf.choice(v, f"{field}[]", tuple(CameraName.__members__)) for v in jf.items(value, field, len(CameraName))]
    if not names or len(set(names)) != len(names):
        raise RecordError(f"{field}: expected \"all\" or camera names, each once, got {value!r:.60}")
    return tuple(CameraName[n] for n in names)


def _waymo_type(value: object, field: str) -> int:
    return int(WaymoType[jf.choice(value, field, tuple(t.name for t in WaymoType if t != WaymoType.UNKNOWN))])
