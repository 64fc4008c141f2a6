"""The runtime registry: a second network backend is one entry, and the choice, the CPU plan, the
names people read and split.json's typed record all follow it (no OpenVINO or model needed)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from detect.core.errors import DependencyError, ModelError, UsageError
from detect.model import runtimes
from detect.model.runtimes import BACKENDS, RUNTIMES, backend_named, choose, cpu_plan, title
from detect.model.runtimes.backend import Backend, Runtime
from detect.model.runtimes.parts import SplitFile
from detect.model.runtimes.split import Split


class Ran:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, images: np.ndarray) -> dict[str, np.ndarray]:
        return {}

    def describe(self) -> dict[str, object]:
        return {"name": self.name}


@dataclasses.dataclass(frozen=True)
class FakeBackend:
    name: str
    title: str
    help: str = "fake (a test's)"
    installed: str | None = "1.0"
    fails: Exception | None = None

    def version(self) -> str | None:
        return self.installed

    def load(self, loaded: Any, model_path: Path, checksum: str, *, batch_size: int, warm: np.ndarray) -> Runtime:
        if self.fails is not None:
            raise self.fails
        return Ran(self.name)


def test_the_choices_are_auto_tensorflow_and_each_registered_backend():
    assert RUNTIMES == ("auto", "tensorflow", *(b.name for b in BACKENDS)) == ("auto", "tensorflow", "openvino")
    entry: Backend = BACKENDS[0]  # mypy checks the entry against the protocol
    assert (entry.name, entry.title, backend_named("openvino")) == ("openvino", "OpenVINO", entry)


def test_people_read_each_runtime_by_its_title_and_an_unknown_one_as_it_is():
    assert [title(n) for n in ("tensorflow", "openvino", "tpu-of-2030")] == ["TensorFlow", "OpenVINO", "tpu-of-2030"]


def pick(requested: str, **kwargs: Any) -> runtimes.Chosen:
    options = {"loaded": None, "model_path": Path("m"), "kind": "real", "warm": np.zeros((2, 4, 4, 3), np.uint8),
               "mirrored": False, "has_gpu": False, "checksum": lambda: "abc"} | kwargs
    return choose(requested, Ran("tensorflow"), **options)


def test_auto_takes_the_first_backend_that_loads_and_says_why_the_first_did_not(monkeypatch):
    broken = FakeBackend("one", "One", fails=ModelError("no network"))
    monkeypatch.setattr(runtimes, "BACKENDS", (broken, FakeBackend("two", "Two")))
    assert pick("auto").runtime.name == "two" and pick("auto").note is None
    monkeypatch.setattr(runtimes, "BACKENDS", (broken, FakeBackend("two", "Two", fails=DependencyError("Two is gone"))))
    chosen = pick("auto")
    assert chosen.runtime.name == "tensorflow"
    assert chosen.note == "note: model m cannot run on One (no network); running on TensorFlow"


def test_a_backend_asked_for_by_name_fails_with_its_title_and_refuses_mirrored(monkeypatch):
    monkeypatch.setattr(runtimes, "BACKENDS", (FakeBackend("one", "One", fails=ModelError("no network")),))
    with pytest.raises(ModelError, match=r"^model m cannot run on One: no network \(--runtime tensorflow runs it\)$"):
        pick("one")
    with pytest.raises(UsageError, match="^--runtime one runs one CPU process; --strategy mirrored needs"):
        pick("one", mirrored=True)
    assert pick("auto", has_gpu=True).runtime.name == "tensorflow"


def test_the_cpu_plan_names_the_first_installed_backend_else_why_tensorflow(monkeypatch, tmp_path):
    monkeypatch.delenv(runtimes.RUNTIME_ENV, raising=False)
    monkeypatch.setenv("DETECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runtimes, "BACKENDS", (FakeBackend("one", "One", installed=None), FakeBackend("two", "Two")))
    plan = cpu_plan(tmp_path / "model", "real", lambda: "0" * 64)
    assert (plan.runtime, plan.version, plan.converted) == ("two", "1.0", ())
    monkeypatch.setattr(runtimes, "BACKENDS", (FakeBackend("one", "One", installed=None),))
    assert cpu_plan(tmp_path / "model", "real", lambda: "0" * 64) == runtimes.CpuPlan("tensorflow", "One is not installed")


def test_split_json_round_trips_as_a_typed_record_and_refuses_what_a_run_never_writes():
    split = Split("pre:0", ("net:0", "net:1"), ("size:0",), ("TopKV2",), 42)
    written = SplitFile(split, "input_tensor:0", {"detection_boxes": "out:0"})
    assert SplitFile.from_json(written.to_json()) == written == SplitFile.from_json(json.loads(json.dumps(written.to_json())))
    assert written.to_json()["split"] == dataclasses.asdict(split)
    for damaged in ([], {"split": {}, "model_input": "x", "outputs": {}}, {**written.to_json(), "outputs": []},
                    {**written.to_json(), "split": {**split.to_json(), "handoff": "size:0"}}):
        with pytest.raises((ValueError, KeyError)):
            SplitFile.from_json(damaged)
