"""The bound from isolated costs on hand-computed sections."""
import pytest

from utils.commands.capacity.bound import IsolatedCosts, bound_line, cameras_bound, isolated_costs


def section(cameras=1, window_s=10.0, decoded=150, delivered=150, decode=4.0, forward=20.0):
    return {"status": "measured", "window_s": window_s, "settings": {"cameras": cameras},
            "total": {"decoded": decoded, "delivered": delivered,
                      "cpu_ms_per_frame": {"decode": decode, "preprocess": 2.0, "forward": forward,
                                           "postprocess": 1.0, "cpu": decode + 3.0 + forward}}}


def test_one_camera_at_15_fps_on_2_cores():
    costs = isolated_costs(section())
    assert costs == IsolatedCosts(4.0, 23.0, 15.0, 15.0)
    # 2 x 1000 / (4 x 15 + 23 x 15) = 2000 / 405
    assert cameras_bound(costs, 2) == pytest.approx(2000.0 / 405.0)
    assert "4.94 cameras" in bound_line(costs, 2)


def test_a_camera_fps_below_the_sources_decodes_every_frame_but_detects_fewer():
    costs = isolated_costs(section(decoded=300, delivered=50))  # 30 fps decoded, 5 handed on
    assert (costs.decoded_fps, costs.delivered_fps) == (30.0, 5.0)
    assert cameras_bound(costs, 4) == pytest.approx(4000.0 / (4.0 * 30 + 23.0 * 5))


def test_rates_are_per_camera():
    assert isolated_costs(section(cameras=3, decoded=450, delivered=450)).decoded_fps == 15.0


def test_a_section_not_measured_or_missing_a_part_gives_none():
    assert isolated_costs({"status": "unavailable"}) is None
    broken = section()
    broken["total"]["cpu_ms_per_frame"]["forward"] = None
    assert isolated_costs(broken) is None
    assert cameras_bound(IsolatedCosts(0.0, 0.0, 15.0, 15.0), 2) is None
