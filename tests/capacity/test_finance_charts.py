"""What a reader of report.html notices in the charts (looked at in headless Chromium at 1400 px), held as
geometry of the drawn matplotlib figures:

* legends sat over the bars they explain (stacked spend, spend versus budget);
* in the forecast row each panel's y label ran into its left neighbour's tick labels;
* heatmap numbers were 6 pt (about 8 px) and black on dark green cells.

Readable numbers: at least 10 pt (at the report's 100 dpi, 10 / 72 x 100 = 13.9 px, the size of the page's table
text, 13 px) and a contrast ratio of at least 4.5:1 with their cell, WCAG 2.1 success criterion 1.4.3 (AA,
https://www.w3.org/TR/WCAG21/#contrast-minimum), with relative luminance as WCAG defines it
(https://www.w3.org/TR/WCAG21/#dfn-relative-luminance). Computed here, not imported from the code under test.
"""

from __future__ import annotations

import dataclasses
import itertools

import matplotlib.colors as mcolors
import pytest
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from capacity import planner
from capacity import report as plan_report
from capacity.finance import charts
from capacity.finance.budget import BudgetRow
from capacity.finance.model import CLOUDS, OPTIONS, Fan, Headroom, Report, build
from capacity.schema import DemandRow, OfferRow, QuotaRow

MONTHS = ["2026-11", "2026-12", "2027-01"]


@pytest.fixture(scope="module")
def report() -> Report:
    offer = OfferRow.model_validate({"cloud": "aws", "region": "us-east-1", "machine_type": "p5.48xlarge",
                                     "gpu": "H100", "gpus_per_node": 8, "option": "on_demand",
                                     "usd_per_gpu_hour": 10.0})
    quota = QuotaRow.model_validate({"cloud": "aws", "region": "us-east-1", "gpu": "H100", "market": "on_demand",
                                     "max_gpus": 64})
    rows = [DemandRow.model_validate({"month": m, "team": "alpha", "gpu": "H100", "gpu_hours": 20_000,
                                      "gang_gpus": 1, "spot_ok": False}) for m in MONTHS]
    run = planner.plan(rows, [offer], [quota], time_limit_s=20)
    budget = [BudgetRow(month=m, cost_center="alpha", usd=190_000.0) for m in MONTHS]
    return build(run, plan_report.summary(run), budget)


def drawn(fig: Figure) -> Figure:
    fig.canvas.draw()
    return fig


def overlap(a: Bbox, b: Bbox) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("which", ["by_cloud", "by_option", "budget"])
def test_legends_stay_off_the_plot_area(report: Report, which: str) -> None:
    fig = drawn(charts.stacked(report, report.by_cloud, CLOUDS, "t") if which == "by_cloud" else
                charts.stacked(report, report.by_option, OPTIONS, "t") if which == "by_option" else
                charts.budget(report))
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert legend is not None
    box = legend.get_window_extent()
    assert not overlap(box, ax.get_window_extent()), "the legend covers the plot area (and the bars in it)"
    figure = fig.bbox
    assert figure.x0 <= box.x0 and box.x1 <= figure.x1  # and it is not cut off at the figure's edge


def test_forecast_panels_labels_do_not_collide(report: Report) -> None:
    fans = [Fan(gpu, ["2024-11", "2024-12"], [41_000.0, 250_000.0], MONTHS, [1e5, 2e5, 3e5], [1.1e5, 2.2e5, 3.3e5],
                [1.2e5, 2.4e5, 3.6e5]) for gpu in ("A100-40GB", "H100", "H200", "L4")]
    fig = drawn(charts.fan(dataclasses.replace(report, fans=fans)))
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 4
    for left, right in itertools.pairwise(panels):
        assert not overlap(left.get_tightbbox(renderer), right.get_tightbbox(renderer)), (
            f"{left.get_title()} and {right.get_title()} overlap (labels run into the neighbour)")
    legends = [*fig.legends, *(ax.get_legend() for ax in panels if ax.get_legend())]
    assert legends
    for legend in legends:
        for ax in panels:
            assert not overlap(legend.get_window_extent(), ax.get_window_extent()), "a legend covers a panel"


def luminance(colour: object) -> float:
    def channel(c: float) -> float:  # WCAG 2.1 relative luminance, sRGB
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in mcolors.to_rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: object, b: object) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_wcag_formula_against_its_documented_extremes() -> None:
    assert contrast("black", "white") == pytest.approx(21.0)  # the largest ratio WCAG names
    assert contrast("#777777", "white") == pytest.approx(4.48, abs=0.01)  # the classic just-failing grey


def test_heatmap_numbers_are_large_and_contrast_with_their_cell(report: Report) -> None:
    # idle (share 0: the darkest green), half used, full (red), over quota (clipped dark red)
    rows = [Headroom("idle", 32, [0.0] * 3), Headroom("half", 10, [5.0] * 3), Headroom("full", 8, [8.0] * 3),
            Headroom("over", 8, [12.0] * 3)]
    fig = drawn(charts.heatmap(dataclasses.replace(report, headroom=rows)))
    ax = fig.axes[0]
    image = ax.get_images()[0]
    cells = image.get_array()
    texts = ax.texts
    assert len(texts) == 4 * 3
    assert [t.get_text() for t in texts[::3]] == ["32", "5", "0", "-4"]  # GPUs left = quota - used, by hand
    cell_px = ax.get_window_extent().width / 3
    renderer = fig.canvas.get_renderer()
    for t in texts:
        assert t.get_fontsize() >= 10, f"{t.get_text()!r} is {t.get_fontsize()} pt"
        j, i = (round(v) for v in t.get_position())
        background = image.cmap(image.norm(cells[i, j]))
        assert contrast(t.get_color(), background) >= 4.5, (t.get_text(), t.get_color(), background)
        assert t.get_window_extent(renderer).width < cell_px  # the number fits its cell
