"""utils.record.source_section: summary.json `source` of a run over video frames, the console's line at start and
the warnings a reading's counts give. Tested on clips the tests make, probed for real, with counts set by hand."""
import pytest

from datasets.sources.counts import SourceCounts
from datasets.sources.dataset import find_dataset
from datasets.sources.settings import DecodeSettings, FrameSelection
from tests.support.clips import moving_shapes, write_clip
from tests.support.helpers import section_shape_errors
from utils.record.sections import SourceSection
from utils.record.source_section import (reading_warnings, selection_words, source_line, source_section,
                                         start_warnings)


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return write_clip(tmp_path_factory.mktemp("clip") / "street.mp4", moving_shapes(160, 120, 9, photo=None))


def test_the_section_names_each_video_its_selection_and_the_first_whole_reading(clip):
    source = find_dataset(clip, None, DecodeSettings(threads=2, selection=FrameSelection(stride=2)))
    first = SourceCounts(arrived=9, decoded=9, delivered=5)
    section = source_section(source, [first, SourceCounts(arrived=9, decoded=9, delivered=5, ended="stopped")],
                             str(clip))
    assert section_shape_errors(section, SourceSection) == []
    assert (section["path"], section["frames"], section["decoder_threads"], section["readings"]) == (str(clip), 5, 2, 2)
    assert section["selection"] == "one frame in 2 (frames 0, 2, 4, ...)" and section["step"] == "decode_frames"
    assert section["videos"] == [{"file": "street.mp4", "codec": "h264", "width": 160, "height": 120, "fps": 15.0,
                                  "frames": 9, "selected": 5, "corrupt_packets_seen_at_start": 0, "ends_early": None}]
    # A pass stops reading after its last frame: the reading's end says so.
    assert section["reading"]["ended"] == "after the last frame run" and section["reading"]["delivered"] == 5
    assert source_section(source, [], str(clip))["reading"] is None


def test_the_start_line_says_what_is_decoded_and_how(clip):
    source = find_dataset(clip, None, DecodeSettings(threads=0, selection=FrameSelection(fps=5)))
    assert source_line(source, "clips/street.mp4") == (
        "Video: clips/street.mp4: 1 video(s) (h264 160x120 15 fps), 3 frame(s) to run (at most 5 frames per second "
        "of the videos' own timestamps), decoded in the measured loop as the step decode_frames with FFmpeg's choice "
        "of decoder thread(s)")
    assert start_warnings(source) == []
    assert selection_words(FrameSelection()) == "every frame"


def test_a_reading_that_skipped_damage_is_said_with_how_much():
    section = {"frames": 20, "reading": {"corrupt_packets": 2, "not_decoded": 3, "delivered": 17,
                                         "concealed_frames": 1}}
    said = reading_warnings(section)
    assert said[0].startswith("dataset.path's video(s): 2 corrupt packet(s) skipped and 3 of 20 frame(s) not decoded "
                              "in each pass (named in skipped.csv")
    assert "the 17 frame(s) that decoded" in said[0] and "1 frame(s) decoded with errors" in said[1]
    assert reading_warnings({"frames": 20, "reading": {"corrupt_packets": 0, "not_decoded": 0, "delivered": 20,
                                                       "concealed_frames": 0}}) == []
    assert reading_warnings({"frames": 20, "reading": None}) == []
