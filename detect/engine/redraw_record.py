"""What `detect redraw` reads from a run's records and writes back into them: the settings as the
manifest records them (decoded once, by `SettingsRecord`), the refusal of a threshold below the
run's score floor, the manifest with the redraw's settings and the file it read, and settings.json
with the redraw's drawing and judging (`SegmentJob.redrawable_key`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from detect.core.errors import InputError, RecordError
from detect.engine.redraw_source import CheckedSource
from detect.engine.spec import SegmentJob, SettingsRecord, recorded_class_map
from detect.model.classmap import load_class_map
from detect.results.manifest import MANIFEST_FILE
from detect.results.results_folder import Manifest, json_object
from detect.waymo.sources import recorded_path


def recorded_settings(manifest: Manifest, class_map: Path | None = None) -> SettingsRecord:
    """The run's settings as its manifest records them (`class_map`, the one a redraw names, in place
    of the recorded one, which is then not read); one InputError naming the manifest when they
    cannot be read back."""
    settings = manifest.data.get("settings")
    if not isinstance(settings, Mapping) or not isinstance(settings.get("draw"), Mapping):
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: records no drawing settings; cannot redraw")
    override = None if class_map is None else load_class_map(class_map)  # a ClassMap is never falsy
    try:
        return SettingsRecord.from_json(settings, track=manifest.data.get("tracking") is not None,
                                        class_map=lambda source: override or recorded_class_map(source))
    except RecordError as err:
        raise InputError(f"{manifest.directory / MANIFEST_FILE}: its settings cannot be read back ({err}); "
                         f"cannot redraw") from None


def check_floor(directory: Path, manifest: Manifest, recorded: SettingsRecord, threshold: float | None) -> None:
    """A threshold below the run's score floor would draw boxes the run never kept: refused."""
    if threshold is None:
        return
    floor = recorded.score_floor if recorded.score_floor is not None else manifest.model.score_floor
    if floor is not None and threshold < floor:
        raise InputError(f"{directory}: cannot redraw at {threshold:g}: the run kept only boxes scoring {floor:g} or "
                         f"more (its score floor); redraw at {floor:g} or above, or run the model again with "
                         f"--score-floor {threshold:g}")
    if floor is None and threshold < recorded.settings.style.threshold:
        raise InputError(f"{directory}: cannot redraw at {threshold:g}: the run records no score floor, so which "
                         f"boxes below its threshold {recorded.settings.style.threshold:g} it kept is unknown")


def updated_manifest(manifest: Manifest, source: CheckedSource, record: SettingsRecord, **sections: object) -> Manifest:
    """The manifest with the redraw's settings (`record`), the file it read (its fingerprint, taken
    now when the run recorded none) and these `sections`."""
    read = dict(json_object(manifest.data.get("input"))) | {
        "path": recorded_path(source.keys.source),
        "fingerprint": None if source.fingerprint is None else source.fingerprint.to_json()}
    return manifest.with_sections(input=read, settings=record.to_json(), **sections)


def redrawn_resume_key(previous: Mapping[str, object], job: SegmentJob) -> dict[str, object]:
    """settings.json as a fresh run with the new drawing settings writes it (so `--resume` with them
    goes on, and with the old ones is refused): the run's, with the redraw's drawing and judging."""
    return {k: v for k, v in previous.items() if k != "redraw"} | job.redrawable_key()
