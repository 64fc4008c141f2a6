"""TensorFlow runs the whole model: the reference runtime, and the one for GPUs and `tf.distribute`.

Batch-1 models (zoo exports) are called once per image; dynamic-batch models get real batches.
With a `MirroredStrategy` each replica (GPU, or CPU slice, see `detect.model.devices`) gets an
equal share of the batch; uneven splits are padded with the last image.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from detect.core.tf_env import import_tensorflow
from detect.model.contract import REQUIRED_OUTPUTS, ModelOutputs

NAME = "tensorflow"
TITLE = "TensorFlow"


class TensorFlowRuntime:
    """`run(images)` -> the model's outputs as numpy; `call_raw` gives every output (warm-up checks keys)."""

    name = NAME

    def __init__(self, model: Any, signature: Any, input_name: str, *, per_replica: int, strategy: Any = None) -> None:
        self._tf = import_tensorflow()
        self._model = model
        self._fn = signature  # serving_default, or None to call the object itself
        self._input_name = input_name
        self._per_replica = per_replica
        self._strategy = strategy
        self._step: Any = self._make_step() if strategy is not None else None

    def describe(self) -> dict[str, object]:
        return {"name": NAME, "version": self._tf.__version__,
                "device": "GPU" if self._tf.config.list_physical_devices("GPU") else "CPU"}

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]:
        """The four contract outputs for a uint8 batch, one row per image."""
        outs = self.call_raw(images)
        return {key: np.concatenate([o[key].numpy() for o in outs])[: len(images)] for key in REQUIRED_OUTPUTS}

    def call_raw(self, chunk: np.ndarray) -> list[ModelOutputs]:
        """Model outputs (tensors, every key) whose batch rows follow `chunk`."""
        if self._strategy is not None:
            return self._run_mirrored(chunk)
        if self._per_replica == 1:
            return [self._call_model(self._tf.constant(chunk[i : i + 1])) for i in range(len(chunk))]
        return [self._call_model(self._tf.constant(chunk))]

    def _call_model(self, batch: Any) -> ModelOutputs:
        out = self._fn(**{self._input_name: batch}) if self._fn is not None else self._model(batch)
        return dict(out)

    def _make_step(self) -> Any:
        strategy = self._strategy

        def replica_fn(batch: Any) -> ModelOutputs:
            return self._call_model(batch)

        @self._tf.function(reduce_retracing=True)
        def step(dist_batch: Any) -> Any:
            return strategy.run(replica_fn, args=(dist_batch,))

        return step

    def _run_mirrored(self, chunk: np.ndarray) -> list[ModelOutputs]:
        strategy = self._strategy
        replicas = strategy.num_replicas_in_sync
        share = math.ceil(len(chunk) / replicas)
        pad = share * replicas - len(chunk)
        if pad:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], pad, axis=0)])
        shards = [chunk[r * share : (r + 1) * share] for r in range(replicas)]
        outs = []
        # A batch-1 model takes one image per replica per step.
        for offset in range(0, share, self._per_replica):
            dist = strategy.experimental_distribute_values_from_function(
                lambda ctx, o=offset: self._tf.constant(
                    shards[ctx.replica_id_in_sync_group][o : o + self._per_replica]
                )
            )
            outs.append(strategy.experimental_local_results(self._step(dist)))
        # Reorder per step and replica back into image order: replica r holds shard r.
        return [step_outs[r] for r in range(replicas) for step_outs in outs]
