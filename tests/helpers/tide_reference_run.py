"""Run by the side venv's Python (tidecv 1.0.1 needs numpy < 2): TIDE's six error kinds as dAP50
per category and their mean, on a COCO export. Arguments: instances.json, detections.json, the
output JSON path. tidecv needs a `segmentation` polygon per annotation: the box's four corners."""

import json
import sys
import tempfile

from tidecv import TIDE, datasets
from tidecv.errors.qualifiers import Qualifier

NAMES = {"Cls": "classification", "Loc": "localisation", "Both": "both", "Dupe": "duplicate", "Bkg": "background",
         "Miss": "missed"}

instances_path, detections_path, out_path = sys.argv[1:4]
with open(instances_path) as f:
    instances = json.load(f)
for annotation in instances["annotations"]:
    x, y, w, h = annotation["bbox"]
    annotation["segmentation"] = [[x, y, x + w, y, x + w, y + h, x, y + h]]
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(instances, f)
tide = TIDE()
run = tide.evaluate(datasets.COCO(f.name), datasets.COCOResult(detections_path), mode=TIDE.BOX, name="run")
result = {"mean": {NAMES[k]: v / 100 for k, v in tide.get_main_errors()["run"].items()}}
base = {k: run.ap_data.objs[k].get_ap() for k in run.ap_data.objs}
for error in TIDE._error_types:
    fixed = run.fix_errors(Qualifier("", None)._make_error_func(error))
    for k in base:
        result.setdefault(str(k), {})[NAMES[error.short_name]] = (fixed.objs[k].get_ap() - base[k]) / 100
with open(out_path, "w") as f:
    json.dump(result, f)
