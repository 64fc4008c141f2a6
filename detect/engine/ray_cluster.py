"""Ray itself for `detect run --engine ray`: importing it, attaching to a cluster or starting one
here, and where the detector actors go given what the cluster has."""

from __future__ import annotations

import logging
from typing import Any

from detect.core.errors import UsageError, error_text
from detect.core.signals import keep_signal_handlers
from detect.engine.spec import RunSpec

INSTALL_HINT = "--engine ray needs Ray: pip install 'waymo-detect[ray]'"
# A Ray we start ourselves gets a small object store: full frames never enter it (see
# ray_stages), and Ray's default (30% of RAM, 7.5 GB on a 24 GB machine) would be wasted.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2
# CPU reservations are bookkeeping (TensorFlow uses ~1.5 cores per actor whatever we reserve).
# Actors must leave CPUs to the tasks: on a 2-CPU node, actors holding every CPU leave none for the
# read tasks and the job hangs forever. The fractions differ on purpose: Ray Data fuses adjacent
# stages with equal resources into one process, which would move decoding into the detector actor
# (on a GPU node, decoding must spread over the CPUs instead).
DETECTOR_CPUS = 0.75
READ_CPUS = 0.25
DECODE_CPUS = 0.5
RENDER_CPUS = 0.5


def import_ray() -> Any:
    """Ray with Ray Data, or a one-line error saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401  (ray without the [data] extra)
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return ray


def actor_restarts(spec: RunSpec) -> dict[str, object]:
    """On a cluster, Ray Data's default: a detector actor lost with its node is started again. On
    Ray started here, no restarts: a crashed actor is a bug or out of memory and would crash again
    (the segment is recorded as failed, `--retry-failed` reruns it), and Ray's core then has no
    reason to print its restart advice to stderr, which it did under --quiet."""
    return {} if spec.ray.address else {"max_restarts": 0}


def start_ray(ray: Any, spec: RunSpec) -> bool:
    """Attach to the cluster or start Ray here; True if this call connected (so we disconnect)."""
    if ray.is_initialized():  # a caller (a notebook, the tests) already set Ray up
        return False
    # Without --debug, Ray's own warnings (token authentication on a local cluster) are not the
    # user's business: they went to stderr even with --quiet. Errors still surface as exceptions.
    quiet: dict[str, object] = {"logging_level": logging.DEBUG if spec.debug else logging.ERROR, "log_to_driver": spec.debug}
    with keep_signal_handlers():
        _init(ray, spec, quiet)
    return True


def _init(ray: Any, spec: RunSpec, quiet: dict[str, object]) -> None:
    if spec.ray.address:
        try:
            ray.init(address=spec.ray.address, **quiet)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise UsageError(f"--ray-address {spec.ray.address}: cannot attach to a Ray cluster ({error_text(error)})") from None
    else:
        ray.init(object_store_memory=LOCAL_OBJECT_STORE_BYTES, include_dashboard=False, **quiet)


def engine_facts(ray: Any, spec: RunSpec) -> dict[str, object]:
    """Where the detector actors go: one per GPU if the cluster has GPUs, else one per node."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    nodes = sum(1 for node in ray.nodes() if node.get("Alive"))
    actors = spec.ray.actors or (gpus if gpus else max(1, nodes))
    cpus, others = resources.get("CPU", 0), READ_CPUS + DECODE_CPUS + RENDER_CPUS
    if actors * DETECTOR_CPUS + others > cpus:
        raise UsageError(f"--ray-actors {actors}: the detector actors reserve {actors * DETECTOR_CPUS:g} CPUs and "
                         f"reading, decoding and drawing need {others:g} more; this cluster has {cpus:g}")
    return {
        "name": "ray",
        "ray_version": ray.__version__,
        "address": spec.ray.address or "local",
        "nodes": nodes,
        "cluster_cpus": cpus,
        "cluster_gpus": gpus,
        "detector_actors": actors,
        "gpus_per_actor": 1 if gpus else 0,
        "cpus_per_actor": DETECTOR_CPUS,
        "note": "segments share one Ray job: pipeline_s runs from the job's start to this segment's last result; "
                "decode and detect are wall time per image in their stage (decode counts both decodes: model "
                "input, then the full frame to draw on); draw and frame_write are task CPU time",
    }
