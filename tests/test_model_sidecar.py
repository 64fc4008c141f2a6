"""`detect_model.json` as a typed record: what the builders in models/ write is what `formats` reads."""

from __future__ import annotations

import json

import pytest

from detect.core.errors import ModelError
from detect.model.defaults import ModelDefaults
from detect.model.sidecar import SIDECAR, ModelSidecar, read_sidecar


def test_a_sidecar_is_written_in_field_order_without_what_it_does_not_say(tmp_path):
    sidecar = ModelSidecar("real", "a detector", short_name="det", classes=(1, 3),
                           defaults=ModelDefaults(input_size="512", threshold=0.3),
                           source={"package": "p", "version": "1"}, facts={"parameters": 7})
    assert list(sidecar.to_json()) == ["kind", "description", "short_name", "classes", "defaults", "source", "parameters"]
    assert sidecar.to_json()["defaults"] == {"input_size": "512", "threshold": 0.3, "nms_iou": None}
    assert ModelSidecar("stub", "fixed boxes").to_json() == {"kind": "stub", "description": "fixed boxes"}
    path = sidecar.write(tmp_path)
    assert path == tmp_path / SIDECAR and path.read_text() == json.dumps(sidecar.to_json(), indent=2) + "\n"
    assert read_sidecar(tmp_path) == sidecar


def test_a_model_without_a_sidecar_has_none_and_a_bad_one_is_named_in_one_line(tmp_path):
    assert read_sidecar(tmp_path) is None
    (tmp_path / SIDECAR).write_text(json.dumps({"kind": "real", "classes": 3}))
    with pytest.raises(ModelError, match=f"^model {tmp_path}: unreadable {SIDECAR}: 'int' object is not iterable$"):
        read_sidecar(tmp_path)
    (tmp_path / SIDECAR).write_text(json.dumps({"kind": "real", "source": ["npm"]}))
    with pytest.raises(ModelError, match=f"^model {tmp_path}: {SIDECAR} has a source that is not an object$"):
        read_sidecar(tmp_path)
    (tmp_path / SIDECAR).write_text(json.dumps({"kind": "huge"}))
    with pytest.raises(ModelError, match=r"has kind 'huge', expected one of \('real', 'stub', 'benchmark'\)$"):
        read_sidecar(tmp_path)
