"""Device setup for `--strategy mirrored`: `tf.distribute.MirroredStrategy` over GPUs or CPU slices.

Environment variable `DETECT_LOGICAL_CPUS=N` (N >= 2): on a machine without a GPU, split the CPU
into N logical devices and mirror the model over them, so multi-device code runs (and is tested)
without GPUs. It brings no speed-up. It must be set before the process does any TensorFlow work,
because TensorFlow fixes its devices when it first uses them; it is ignored when a GPU is visible,
and without `--strategy mirrored` the model still runs on one device.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from detect.core.errors import UsageError
from detect.core.tf_env import import_tensorflow

LOGICAL_CPUS_ENV = "DETECT_LOGICAL_CPUS"


def logical_cpus_from_env(environ: Mapping[str, str] = os.environ) -> int | None:
    """N from `DETECT_LOGICAL_CPUS`, or None when unset or empty."""
    raw = environ.get(LOGICAL_CPUS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 2:
        raise UsageError(f"{LOGICAL_CPUS_ENV} must be a whole number >= 2, got {raw!r}")
    return int(raw)


def configure_logical_cpus(n: int) -> None:
    """Split the first physical CPU into `n` logical devices; must run before TF uses devices."""
    tf = import_tensorflow()

    cpu = tf.config.list_physical_devices("CPU")[0]
    existing = tf.config.get_logical_device_configuration(cpu)
    if existing is not None and len(existing) == n:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError:
        raise UsageError(
            f"{LOGICAL_CPUS_ENV}={n} came too late: TensorFlow had already set up its devices; "
            "create the mirrored detector before any other TensorFlow work in this process"
        ) from None


def prepare_devices(environ: Mapping[str, str] = os.environ) -> None:
    """Apply `DETECT_LOGICAL_CPUS` if set and no GPU is visible; call before any TF device use.

    The detector calls it whatever its strategy, so that a single-device detector created first
    does not lock the device list before a mirrored one needs it.
    """
    n = logical_cpus_from_env(environ)
    if n is not None and not import_tensorflow().config.list_physical_devices("GPU"):
        configure_logical_cpus(n)


def mirrored_strategy(environ: Mapping[str, str] = os.environ):  # -> tf.distribute.Strategy
    """MirroredStrategy over all visible GPUs; without GPUs over `DETECT_LOGICAL_CPUS` CPU slices
    (or the one CPU, a single replica)."""
    tf = import_tensorflow()

    if tf.config.list_physical_devices("GPU"):
        return tf.distribute.MirroredStrategy()
    n = logical_cpus_from_env(environ)
    if n is None:
        return tf.distribute.MirroredStrategy(["/cpu:0"])
    configure_logical_cpus(n)
    devices = [d.name for d in tf.config.list_logical_devices("CPU")][:n]
    return tf.distribute.MirroredStrategy(devices)
