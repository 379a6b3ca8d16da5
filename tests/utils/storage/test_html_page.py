import base64
import re

import cv2
import numpy as np

from utils.storage.html_page import Bar, HtmlPage, bar_chart_svg, format_cell


def test_page_is_self_contained_and_escapes_what_it_is_given(tmp_path):
    image = tmp_path / "dot.png"
    cv2.imwrite(str(image), np.full((4, 6, 3), 200, np.uint8))
    page = (HtmlPage("run <a&b>").headline([("images/s", 1.23456)]).warnings(["<script>x</script>"])
            .table(["step", "p50_ms"], [("model.forward", 12.5)], text_columns=["step"], row_titles=["path <x>"])
            .image(image, "dot")).render()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "run &lt;a&amp;b&gt;" in page and 'title="path &lt;x&gt;"' in page
    assert not re.search(r"(src|href)=\"https?:", page)
    encoded = re.search(r'src="data:image/png;base64,([^"]+)"', page).group(1)
    assert cv2.imdecode(np.frombuffer(base64.b64decode(encoded), np.uint8), cv2.IMREAD_COLOR).shape == (4, 6, 3)
    assert "1.235" in page


def test_cells_print_missing_values_as_blank_and_large_numbers_grouped():
    assert format_cell(None) == "" and format_cell(float("nan")) == ""
    assert format_cell(123456.7) == "123,457" and format_cell(0.000123456) == "0.0001235"


def test_bar_chart_scales_bars_to_the_largest_and_escapes_hover_text():
    svg = bar_chart_svg([Bar("conv", 2.0, "2 ms", "path model.0 <conv>\nshapes 1x3"), Bar("act", 0.5, "0.5 ms", "a")])
    widths = [float(w) for w in re.findall(r'<rect x="330" y="\d+" width="([\d.]+)"', svg)]
    assert widths == [1000 - 330 - 170, (1000 - 330 - 170) / 4]
    assert "<title>path model.0 &lt;conv&gt;\nshapes 1x3</title>" in svg
    assert 'viewBox="0 0 1000 44"' in svg


def test_headline_keeps_exact_numbers_and_only_numbers_in_data_value():
    page = HtmlPage("t").headline([("images/s", 1.23456789), ("verdict", "EQUAL"), ("n", None)],
                                  tones={"verdict": "good"}).render()
    assert 'data-value="1.23456789"' in page and ">1.235<" in page
    assert page.count("data-value") == 1
    assert '<div class="figure good"><div class="value">EQUAL</div>' in page
