"""The pieces of the PNG plots (utils/storage/png_figure.py): steps in the pipeline's order then the rest, one stable
colour per step, and a figure saved whole with its red banner when it carries a note."""
import matplotlib.image

from utils.storage.png_figure import BANNER_COLOR, PALETTE, bar_figure, ordered_steps, save_png, step_colors

ORDER = ("load", "preprocess", "forward", "postprocess")


def test_steps_follow_the_pipelines_order_then_the_others_by_name():
    assert ordered_steps({"forward", "zeta", "load", "annotate_save"}, ORDER) == [
        "load", "forward", "annotate_save", "zeta"]


def test_a_step_keeps_its_colour_whatever_else_is_present():
    alone = step_colors({"forward"}, ORDER)
    crowded = step_colors({"forward", "aaa_first", "load"}, ORDER)
    assert alone["forward"] == crowded["forward"] == PALETTE[2]
    assert crowded["aaa_first"] == PALETTE[4]  # after every step of the order


def test_a_figure_is_saved_whole_with_a_red_banner_only_when_it_has_a_note(tmp_path):
    figure, axes = bar_figure(rows=20)
    assert figure.get_figheight() == 1.2 + 0.32 * 20 and bar_figure(rows=1)[0].get_figheight() == 3.0
    axes.barh(["a", "b"], [1, 2])
    noted = save_png(figure, tmp_path / "plots" / "noted.png", "RANDOM WEIGHTS")
    plain_figure, plain_axes = bar_figure(rows=2)
    plain_axes.barh(["a", "b"], [1, 2])
    plain = save_png(plain_figure, tmp_path / "plots" / "plain.png", None)
    assert noted.read_bytes()[:8] == plain.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    red = tuple(int(BANNER_COLOR[i:i + 2], 16) / 255 for i in (1, 3, 5))
    top_left = [tuple(round(float(v), 2) for v in matplotlib.image.imread(path)[2, 2, :3]) for path in (noted, plain)]
    assert top_left[0] == tuple(round(v, 2) for v in red) and top_left[1] != top_left[0]
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == ["noted.png", "plain.png"]
