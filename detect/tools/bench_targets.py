"""`make bench`: how a measured number reads against the target an issue set for it."""

from __future__ import annotations


def verdict(value: float, target: float, above: bool = True) -> str:
    """"(target >= 11: met)" when `value` reaches `target` from the side `above` says, else "... MISSED"."""
    ok = value >= target if above else value <= target
    return f"(target {'>=' if above else '<='} {target:g}: {'met' if ok else 'MISSED'})"
