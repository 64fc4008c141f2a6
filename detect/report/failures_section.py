"""How the detector fails, on a report page: TIDE's error kinds (the AP50 each kind of mistake
costs, per type with labels and their mean) and the confusion matrix at the drawing threshold,
with what each model class became; all from `eval.json` (`error_kinds`, `confusion`)."""

from __future__ import annotations

from collections.abc import Mapping

from detect.report import safe
from detect.report.html import count_cell, num, table
from detect.results.eval_record import EvalRecord

KINDS = {"classification": "classification", "localisation": "localisation", "both": "both", "duplicate": "duplicate",
         "background": "background", "missed": "missed"}
KINDS_NOTE = ("TIDE's error kinds (Bolya et al. 2020), LEVEL_2: each number is the AP50 a type gains when that kind "
              "of mistake alone is fixed. Classification: the box is right, the type wrong; localisation: the type "
              "right, the box off (IoU 0.1 to 0.5); both: neither; duplicate: a second box on a label already found; "
              "background: a box on nothing; missed: a label no detection points at. Mean: over the types with "
              "labels. Every score counts, as in AP.")
CONFUSION_NOTE = ("At the drawing threshold {threshold} and IoU 0.5, LEVEL_2. Rows: the labels, each in the column of "
                  "the detection that took it (its own type: a hit; another type: confused), or missed. The background "
                  "row: the false alarms of each type (a detection of one type on a label of another is one of them "
                  "too).")


def failures_section(report: EvalRecord) -> str:
    """The error kinds and the confusion matrix ("" when eval.json holds neither)."""
    return _kinds(safe.mapping(report.error_kinds.get("LEVEL_2"))) + _confusion(report.confusion)


def _kinds(level: Mapping[str, object]) -> str:
    rows = [[name, *(num(safe.mapping(values).get(kind), 3) for kind in KINDS)] for name, values in level.items()]
    if not rows:
        return ""
    return (f"<h3>Where the AP goes: kinds of error</h3><p class='muted'>{safe.text(KINDS_NOTE)}</p>"
            + table(["type", *KINDS.values()], rows, css="error-kinds"))


def _confusion(confusion: Mapping[str, object]) -> str:
    names = [str(n) for n in safe.items(confusion.get("names"))]
    matrix = [safe.items(row) for row in safe.items(confusion.get("matrix"))]
    if not names or len(matrix) != len(names) or any(len(row) != len(names) for row in matrix):
        return ""
    rows = [[f"{name} labels" if name != names[-1] else "false alarms", *(count_cell(v) for v in row)]
            for name, row in zip(names, matrix, strict=True)
            if any(safe.count(v) for v in row) or name == names[-1]]  # a type without labels: no row
    note = CONFUSION_NOTE.format(threshold=safe.number(confusion.get("threshold"), 2))
    out = (f"<h3>Confusion</h3><p class='muted'>{safe.text(note)}</p>"
           + table(["", *(f"as {n}" for n in names[:-1]), "missed"], rows, css="confusion"))
    classes = [safe.mapping(c) for c in safe.items(confusion.get("classes"))]
    class_rows = [[c.get("name"), c.get("type"), count_cell(c.get("detections")),
                   ", ".join(f"{on} {safe.count_text(n)}" for on, n in safe.mapping(c.get("on")).items())]
                  for c in classes]
    if class_rows:
        out += ("<p class='muted'>The model's classes at the threshold: the Waymo type each became, and what its "
                "boxes landed on (a label of a type, or background: none).</p>"
                + table(["model class", "Waymo type", "boxes", "landed on"], class_rows, css="classes"))
    return out
