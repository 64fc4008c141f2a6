"""Filters for a page's galleries, in the browser, from file:// with no server and no network.

Each gallery item is a `<figure>` whose data attributes say what it shows: `data-state` (hit,
false-alarm, missed), `data-type`, `data-range` (the range band of its box, `unknown` without a
range), `data-camera`, `data-score` (when it has one) and `data-object-id` (one item per object in
a gallery). The controls are a `<form class="filters">` of selects, one per attribute and a lowest
score; the script that applies them is a file beside the page's pictures (`filters.js`, allowed by
the page's Content-Security-Policy as `script-src 'self'`: nothing inline, nothing remote). The
form is `hidden` until the script shows it, so without JavaScript every item shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from detect.core.atomic import atomic_write_bytes
from detect.report import safe
from detect.sinks.layout import real_file

SCRIPT_FILE = "filters.js"
FORM = "<form class='filters'"  # how a page's sections show they hold a gallery to filter
STATES = ("hit", "false-alarm", "missed")
STATE_NAMES = {"hit": "hit", "false-alarm": "false alarm", "missed": "missed"}
# Waymo's range breakdown (breakdown.proto: RANGE), metres from the car.
RANGE_BANDS = ((0.0, 30.0, "0-30 m"), (30.0, 50.0, "30-50 m"), (50.0, math.inf, "50+ m"))
UNKNOWN_RANGE = "unknown"
SCORES = (0.3, 0.5, 0.7, 0.9)  # the lowest-score choices, beside "any"

SCRIPT = """"use strict";
(function () {
  var form = document.querySelector("form.filters");
  if (!form) { return; }
  var items = Array.prototype.slice.call(document.querySelectorAll("figure[data-state]"));
  var names = ["state", "type", "range", "camera"];
  function apply() {
    var lowest = parseFloat(form.elements.score ? form.elements.score.value : "");
    var shown = 0;
    items.forEach(function (item) {
      var show = names.every(function (name) {
        var control = form.elements[name];
        return !control || !control.value || item.dataset[name] === control.value;
      });
      if (show && !isNaN(lowest)) {
        var score = parseFloat(item.dataset.score);
        show = !isNaN(score) && score >= lowest;
      }
      item.hidden = !show;
      shown += show ? 1 : 0;
    });
    document.querySelectorAll(".gallery-group").forEach(function (group) {
      group.hidden = !group.querySelector("figure[data-state]:not([hidden])");
    });
    var count = form.querySelector("output");
    if (count) { count.textContent = shown + " of " + items.length + " shown"; }
  }
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.hidden = false;
  apply();
})();
"""


@dataclass(frozen=True)
class Item:
    """What one gallery item shows, as its figure's data attributes say it."""

    state: str  # one of STATES
    type: str
    camera: str
    object_id: str
    score: float | None = None
    range_m: float | None = None

    @property
    def range(self) -> str:
        return range_band(self.range_m)

    def attributes(self) -> str:
        """The figure's data attributes, escaped."""
        score = f" data-score='{self.score:.3f}'" if self.score is not None and math.isfinite(self.score) else ""
        return (f" data-state='{safe.text(self.state)}' data-type='{safe.text(self.type)}' "
                f"data-range='{safe.text(self.range)}' data-camera='{safe.text(self.camera)}'{score} "
                f"data-object-id='{safe.text(self.object_id)}'")


def range_band(range_m: float | None) -> str:
    """The range band of a box `range_m` metres from the car ("0-30 m", "30-50 m", "50+ m"), or
    "unknown" without one (a box whose range nothing measured or estimated)."""
    if range_m is None or not math.isfinite(range_m) or range_m < 0:
        return UNKNOWN_RANGE
    return next(name for low, high, name in RANGE_BANDS if low <= range_m < high)


def form(items: Sequence[Item]) -> str:
    """The controls for `items` (each select offering the values they hold); "" without items."""
    if not items:
        return ""
    bands = [name for _, _, name in RANGE_BANDS] + [UNKNOWN_RANGE]
    selects = [_select("state", _present(STATES, (i.state for i in items)), STATE_NAMES),
               _select("type", sorted({i.type for i in items})),
               _select("range", _present(bands, (i.range for i in items))),
               _select("camera", sorted({i.camera for i in items}))]
    scores = "".join(f"<option value='{s}'>{s:.1f} or more</option>" for s in SCORES)
    selects.append(f"<label>score <select name='score'><option value=''>any</option>{scores}</select></label>")
    return f"{FORM} hidden>{' '.join(selects)} <output></output></form>"


def _select(name: str, values: Iterable[str], shown: Mapping[str, str] | None = None) -> str:
    """A labelled select of `values` (`shown`: their names on screen), "all" first."""
    options = "".join(f"<option value='{safe.text(v)}'>{safe.text((shown or {}).get(v, v))}</option>" for v in values)
    return f"<label>{name} <select name='{name}'><option value=''>all</option>{options}</select></label>"


def _present(order: Sequence[str], values: Iterable[str]) -> list[str]:
    held = set(values)
    return [v for v in order if v in held]


def write_script(assets: Path) -> Path:
    """`filters.js` in the page's assets folder (written again with each page: never a stale one)."""
    return atomic_write_bytes(real_file(assets / SCRIPT_FILE), SCRIPT.encode())
