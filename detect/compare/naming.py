"""What to call the two sides of a comparison: by what differs between them, not by what they share.

Two runs of one model are "tiles 512" and "no tiles", not "CenterNet MobileNetV3" twice: the
settings that change what a model finds (input size, tiles, threshold, score floor, NMS), then
what ran it; when none of these differ, the results folders' names. Two models are named by
their names (by their weights' hashes when the names are the same).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePath

from detect.compare.comparison import SideFacts

LIMIT = 52  # characters: a name above a 480-px picture


def _tiles(value: object) -> str:
    return "no tiles" if value in (None, "none") else f"tiles {value}"


def _input_size(value: object) -> str:
    text = str(value)
    return f"input {text.removeprefix('fit:')}" if text.startswith("fit:") else f"input {text}"


# (SideFacts.to_json key, how its value reads in a name), in the order they are named.
SETTINGS: tuple[tuple[str, Callable[[object], str]], ...] = (
    ("input size", _input_size),
    ("tiles", _tiles),
    ("threshold", lambda v: f"threshold {v:g}" if isinstance(v, (int, float)) else f"threshold {v}"),
    ("score floor", lambda v: f"score floor {v}"),
    ("NMS IoU", lambda v: f"NMS {v}"),
)
MODEL = ("model", "description", "sha256", "classes")


def side_names(a: SideFacts, b: SideFacts) -> tuple[str, str]:
    """A's and B's names (without the "A: " prefix), each naming what sets it apart. Two models are
    named by the models alone: their own input sizes and thresholds come with them (the facts
    table shows each setting, those that differ in bold)."""
    fa, fb = a.to_json(), b.to_json()
    if any(fa.get(k) != fb.get(k) for k in MODEL):
        model_a, model_b = _model(fa), _model(fb)
        if model_a == model_b:  # the same name, other weights
            model_a, model_b = f"{model_a} {fa.get('sha256') or '?'}", f"{model_b} {fb.get('sha256') or '?'}"
        return _short(model_a), _short(model_b)
    parts_a: list[str] = []
    parts_b: list[str] = []
    for key, say in SETTINGS:
        if fa.get(key) != fb.get(key):
            parts_a.append(say(fa.get(key)))
            parts_b.append(say(fb.get(key)))
    if fa.get("runtime") != fb.get("runtime"):
        parts_a.append(str(fa.get("runtime") or "runtime not recorded"))
        parts_b.append(str(fb.get("runtime") or "runtime not recorded"))
    if not parts_a:
        folder_a, folder_b = _folders(a.results, b.results)
        parts_a, parts_b = [folder_a], [folder_b]
    return _short(", ".join(parts_a)), _short(", ".join(parts_b))


def title(a: SideFacts, b: SideFacts, names: tuple[str, str]) -> str:
    """The page's heading: the shared model, then the two names ("CenterNet: tiles 512 vs no tiles")."""
    shared = a.model if a.model == b.model and a.model else None
    versus = f"{names[0]} vs {names[1]}"
    return f"{shared}: {versus}" if shared and not names[0].startswith(shared) else versus


def _model(facts: Mapping[str, object]) -> str:
    return str(facts.get("model") or facts.get("description") or "model not recorded")


def _folders(a: str, b: str) -> tuple[str, str]:
    """The shortest trailing parts of the two folders' paths that tell them apart."""
    pa, pb = PurePath(a).parts, PurePath(b).parts
    for n in range(1, max(len(pa), len(pb)) + 1):
        tail_a, tail_b = "/".join(pa[-n:]), "/".join(pb[-n:])
        if tail_a != tail_b:
            return tail_a, tail_b
    return a, b


def _short(name: str) -> str:
    return name if len(name) <= LIMIT else name[: LIMIT - 3] + "..."
