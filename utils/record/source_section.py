"""summary.json `source` for a run over video frames: each video as probed at start, which of its frames the run
reads and how they are decoded, and what a whole reading of them met (frames decoded, corrupt packets skipped,
frames not decoded). Every pass reads the videos again and a file's reading meets the same each time, so one
reading stands for all of them; the words a person reads about it (the start's line, the warnings) are here too."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from datasets.sources.counts import SourceCounts
from datasets.sources.dataset import DatasetSource
from datasets.sources.settings import FrameSelection
from utils.record.sections import SourceReading, SourceSection
from utils.record.steps import DECODE_FRAMES_STEP

DEFINITION = ("every pass reads the videos again from their start and decodes every frame up to the last one it "
              "runs (the next ones are predicted from it), converting the selected ones to BGR: the step "
              f"{DECODE_FRAMES_STEP}, inside each batch's pipeline time. `reading` is what one reading over every "
              "selected frame met; a corrupt packet is skipped and the frame it held, never given out by the "
              "decoder, goes to skipped.csv")


def selection_words(selection: FrameSelection) -> str:
    if selection.fps is not None:
        return f"at most {selection.fps:g} frames per second of the videos' own timestamps"
    if selection.stride == 1:
        return "every frame"
    return f"one frame in {selection.stride} (frames 0, {selection.stride}, {2 * selection.stride}, ...)"


def _name(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def source_section(source: DatasetSource, readings: Sequence[SourceCounts], path: str) -> SourceSection:
    """`readings`: the counts of every reading that went over all of the run's frames, in order; `path`:
    dataset.path as the config gives it."""
    settings = source.videos[0].settings
    selected: dict[Path, int] = {}
    for item in source.items:
        selected[item.video] = selected.get(item.video, 0) + 1
    videos = [{"file": _name(video.info.path, source.root), "codec": video.info.codec, "width": video.info.width,
               "height": video.info.height, "fps": video.info.fps, "frames": video.info.frames,
               "selected": selected.get(video.info.path, 0), "corrupt_packets_seen_at_start": video.info.corrupt_packets,
               "ends_early": video.info.truncated} for video in source.videos]
    first: Optional[SourceReading] = None
    if readings:
        counts = readings[0]
        first = {"arrived": counts.arrived, "decoded": counts.decoded, "delivered": counts.delivered,
                 "not_decoded": counts.not_decoded, "corrupt_packets": counts.corrupt_packets,
                 "concealed_frames": counts.concealed_frames,
                 # A pass stops reading after its last frame: no end of its own, unless the data ended first.
                 "ended": counts.ended or "after the last frame run"}
    return {"kind": source.kind, "path": path, "step": DECODE_FRAMES_STEP, "frames": len(source.items),
            "selection": selection_words(settings.selection), "decoder_threads": settings.threads, "videos": videos,
            "reading": first, "readings": len(readings), "definition": DEFINITION}


def source_line(source: DatasetSource, path: str) -> str:
    """The console's line at start: what will be read (`path`: dataset.path as given), and how."""
    settings, infos = source.videos[0].settings, [video.info for video in source.videos]
    kinds = sorted({f"{info.codec} {info.width}x{info.height}" + (f" {info.fps:g} fps" if info.fps else "")
                    for info in infos})
    threads = "FFmpeg's choice of" if settings.threads == 0 else str(settings.threads)
    return (f"Video: {path}: {len(infos)} video(s) ({'; '.join(kinds[:3])}{', ...' if len(kinds) > 3 else ''}), "
            f"{len(source.items)} frame(s) to run ({selection_words(settings.selection)}), decoded in the measured "
            f"loop as the step {DECODE_FRAMES_STEP} with {threads} decoder thread(s)")


def start_warnings(source: DatasetSource) -> list[str]:
    """What the probe saw that the passes will meet again: data cut short, packets the demuxer flagged corrupt."""
    warnings = []
    for video in source.videos:
        info, name = video.info, _name(video.info.path, source.root)
        if info.truncated:
            warnings.append(f"video {name} ends early (FFmpeg: {info.truncated}): its {info.frames} frame(s) up to "
                            "there are read, and a frame whose data is cut goes to skipped.csv; copy or download the "
                            "file again for the rest")
        if info.corrupt_packets:
            warnings.append(f"video {name}: the demuxer flags {info.corrupt_packets} packet(s) corrupt; each pass "
                            "skips them and counts them (summary.json source.reading), their frames go to skipped.csv")
    return warnings


def reading_warnings(section: SourceSection) -> list[str]:
    """What the reading met, as the run's warnings: the run went on, and says how much it went without."""
    reading = section.get("reading")
    if not reading:
        return []
    warnings = []
    if reading["corrupt_packets"] or reading["not_decoded"]:
        warnings.append(f"dataset.path's video(s): {reading['corrupt_packets']} corrupt packet(s) skipped and "
                        f"{reading['not_decoded']} of {section['frames']} frame(s) not decoded in each pass (named in "
                        "skipped.csv, left out of every figure); the run went on with the "
                        f"{reading['delivered']} frame(s) that decoded")
    if reading["concealed_frames"]:
        warnings.append(f"dataset.path's video(s): {reading['concealed_frames']} frame(s) decoded with errors the "
                        "decoder concealed (damaged data): they were run as decoded")
    return warnings
