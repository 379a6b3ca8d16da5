"""COCO's video extension matched to a run's video frames: `videos` (each an `id` and a `file_name` or `name`)
and `images` entries carrying `video_id` and `frame_id` (the frame's index from 0, as detections.csv's `frame`).
A video's name matches the video's path relative to dataset.path, its file name, or either without the suffix."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from datasets.label_checks import LabelError, twice
from datasets.sources.identity import FrameRef
from utils.core.bounded_text import shown


def is_frame_entry(entry: dict) -> bool:
    return "video_id" in entry


def frame_entry_indices(document: dict, entries: Sequence[dict], path: Path, root: Path,
                        items: Sequence[object]) -> dict[object, int]:
    """{image id: index in `items`} for the entries naming a frame of a video of the run; LabelError for an
    entry that cannot be read or names a frame the video does not have."""
    frame_entries = [(number, entry) for number, entry in enumerate(entries) if is_frame_entry(entry)]
    if not frame_entries:
        return {}
    for number, entry in frame_entries:
        frame_id = entry.get("frame_id")
        if isinstance(frame_id, bool) or not isinstance(frame_id, int) or frame_id < 0:
            raise LabelError(f"{path}: images[{number}] has a video_id, so it needs a whole-number `frame_id` "
                             f"(the frame's index from 0), got {shown(frame_id, 30)}")
    twice([((entry["video_id"], entry["frame_id"]), f"images[{number}] (id {shown(entry.get('id'), 30)})")
           for number, entry in frame_entries], "video_id and frame_id", str(path), "list every frame once")
    video_of = _videos(document, path, root, items)
    frames: dict[tuple[Path, int], int] = {}
    for index, item in enumerate(items):
        if isinstance(item, FrameRef):
            frames[(item.video, item.index)] = index
    counts = {item.video: item.video_frames for item in items if isinstance(item, FrameRef)}
    found: dict[object, int] = {}
    for number, entry in frame_entries:
        video = video_of.get(entry["video_id"]) if _hashable(entry["video_id"]) else None
        if video is None:
            continue  # a video outside this run
        if entry["frame_id"] >= counts[video]:
            raise LabelError(f"{path}: images[{number}] names frame_id {entry['frame_id']} of video "
                             f"{video.relative_to(root).as_posix()}, which has {counts[video]} frames (0 to "
                             f"{counts[video] - 1}); frame_id counts from 0, as detections.csv's frame does (a file "
                             "that counts from 1, as ByteTrack's converters write, needs 1 subtracted)")
        index = frames.get((video, entry["frame_id"]))
        if index is not None:
            found[entry["id"]] = index
    return found


def _hashable(value: object) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _videos(document: dict, path: Path, root: Path, items: Sequence[object]) -> dict[object, Path]:
    """{video id: the run's video it names}."""
    listed = document.get("videos")
    if not isinstance(listed, list):
        raise LabelError(f"{path}: its images name a video_id, so it needs a list `videos` (each an `id` and a "
                         "`file_name` or `name`); this one has "
                         f"{'none' if listed is None else type(listed).__name__}")
    names = _names(root, [item.video for item in items if isinstance(item, FrameRef)])
    video_of: dict[object, Path] = {}
    for number, video in enumerate(listed):
        name = video.get("file_name", video.get("name")) if isinstance(video, dict) else None
        if not isinstance(name, str) or not _hashable(video.get("id")):
            raise LabelError(f"{path}: videos[{number}] needs an `id` and a `file_name` (or `name`)")
        name = name.replace("\\", "/")
        match = names.get(name, names.get(Path(name).name, names.get(Path(name).stem)))
        if match is not None:
            video_of[video["id"]] = match
    return video_of


def _names(root: Path, videos: Sequence[Path]) -> dict[str, Optional[Path]]:
    """Every name a video may be listed by; a name two videos share names neither."""
    names: dict[str, Optional[Path]] = {}
    for video in dict.fromkeys(videos):
        relative = video.relative_to(root)
        for name in {relative.as_posix(), relative.with_suffix("").as_posix(), video.name, video.stem}:
            names[name] = None if name in names and names[name] != video else video
    return {name: video for name, video in names.items() if video is not None}
