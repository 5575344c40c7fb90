"""The report's charts: matplotlib (Agg, no display) rendered to PNG bytes, embedded in the HTML as base64."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from capacity.finance import actuals, held
from capacity.finance.model import CLOUDS, OPTIONS, Report

COLOURS = {"aws": "#ff9900", "gcp": "#4285f4", "azure": "#26a69a", "on_demand": "#5b6770", "spot": "#8bc34a",
           "commit_1y": "#7e57c2", "commit_3y": "#311b92", "reservation": "#00897b", "capacity_block": "#e65100",
           "flex_start": "#c0ca33"}
DPI = 100
CELL_POINTS = 11  # heatmap numbers: 11 pt at 100 dpi is about 15 px, readable where the page shows the PNG 1:1
HEAT = "RdYlGn_r"


@dataclass
class Chart:
    key: str
    title: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


def _usd(x: float, _pos: object = None) -> str:
    return f"${x / 1e6:,.1f}M" if abs(x) >= 1e6 else f"${x / 1e3:,.0f}k"


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _legend_outside(ax: Axes) -> None:
    """The legend right of the plot area, never over the bars it explains."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=9, frameon=False)


def stacked(report: Report, by: dict[str, dict[str, float]], keys: tuple[str, ...], title: str) -> Figure:
    buckets = report.buckets
    fig, ax = plt.subplots(figsize=(11, 4.2), layout="constrained")
    bottom = np.zeros(len(buckets))
    for key in keys:
        values = np.array([by.get(b, {}).get(key, 0.0) for b in buckets])
        if values.any():
            ax.bar(buckets, values, bottom=bottom, label=key, color=COLOURS.get(key))
            bottom += values
    ax.set_title(title)
    ax.yaxis.set_major_formatter(FuncFormatter(_usd))
    ax.tick_params(axis="x", rotation=45)
    _legend_outside(ax)
    ax.grid(axis="y", alpha=0.3)
    return fig


def fan(report: Report) -> Figure:
    fig, axes = plt.subplots(1, len(report.fans), figsize=(3.2 * len(report.fans) + 1, 3.9), squeeze=False,
                             layout="constrained")
    for ax, one in zip(axes[0], report.fans, strict=True):
        n = len(one.history_months)
        x_hist = np.arange(n)
        x_fut = np.arange(n, n + len(one.months))
        ax.plot(x_hist, np.array(one.history_gpu_hours) / 1e3, color="#333", label="history")
        ax.fill_between(x_fut, np.array(one.p50) / 1e3, np.array(one.p90) / 1e3, color="#4285f4", alpha=0.2,
                        label="P50-P90")
        ax.fill_between(x_fut, np.array(one.p50) / 1e3, np.array(one.p80) / 1e3, color="#4285f4", alpha=0.35,
                        label="P50-P80")
        ax.plot(x_fut, np.array(one.p50) / 1e3, color="#1a4fa0", label="P50")
        labels = one.history_months + one.months
        step = max(1, len(labels) // 6)
        ax.set_xticks(range(0, len(labels), step), labels[::step], rotation=45, fontsize=8)
        ax.set_title(one.gpu)
        ax.grid(alpha=0.3)
    # one y label for the row, left of the first panel: per-panel labels ran into the neighbour's tick labels
    fig.supylabel("thousand GPU-hours / month", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=9, frameon=False)
    fig.suptitle("Demand forecast by GPU (sum over teams of each series' quantiles)")
    return fig


def _ink(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever contrasts more with a cell colour (WCAG 2 relative luminance)."""
    lum = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    y = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2]
    return "black" if (y + 0.05) / 0.05 >= 1.05 / (y + 0.05) else "white"


def heatmap(report: Report) -> Figure:
    rows = report.headroom
    data = np.array([[(u / h.quota_gpus if h.quota_gpus > 0 else (np.inf if u > 0 else 0.0)) for u in h.used_gpus]
                     for h in rows])
    shown = np.clip(np.nan_to_num(data, posinf=1.5), 0, 1.5)
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.8), layout="constrained")
    image = ax.imshow(shown, cmap=HEAT, vmin=0, vmax=1.2, aspect="auto")
    ax.set_yticks(range(len(rows)), [h.label for h in rows], fontsize=10)
    ax.set_xticks(range(len(report.months)), report.months, rotation=45, fontsize=9)
    for i, h in enumerate(rows):
        for j, left in enumerate(h.headroom()):
            ax.text(j, i, f"{left:,.0f}", ha="center", va="center", fontsize=CELL_POINTS,
                    color=_ink(image.cmap(image.norm(shown[i, j]))))
    fig.colorbar(image, ax=ax, label="share of quota used")
    ax.set_title("Quota headroom: GPUs left per month (colour: share of quota used; red beyond 100 %)")
    return fig


def budget(report: Report) -> Figure:
    assert report.variance is not None
    plan = [sum(report.team_month.get((m, t.team), 0.0) for t in report.teams) for m in report.months]
    wanted = [sum(v.budget_usd for v in report.variance if v.month == m) for m in report.months]
    fig, ax = plt.subplots(figsize=(11, 3.6), layout="constrained")
    ax.bar(report.months, plan, color="#4285f4", label="plan")
    ax.plot(report.months, wanted, color="#d32f2f", marker="o", label="budget")
    ax.yaxis.set_major_formatter(FuncFormatter(_usd))
    ax.tick_params(axis="x", rotation=45)
    _legend_outside(ax)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Monthly spend versus budget (commitment charges spread over their terms)")
    return fig


def figures(report: Report) -> list[tuple[str, str, Figure]]:
    """Every chart the report has data for, in the order the HTML shows them: (key, title, figure)."""
    out = [("by_cloud", "Monthly spend by cloud", stacked(report, report.by_cloud, CLOUDS, "Monthly spend by cloud")),
           ("by_option", "Monthly spend by purchase option",
            stacked(report, report.by_option, OPTIONS, "Monthly spend by purchase option"))]
    if report.variance is not None:
        out.append(("budget", "Spend versus budget", budget(report)))
    if report.fans:
        out.append(("forecast", "Demand forecast", fan(report)))
    if report.headroom:
        out.append(("headroom", "Quota headroom", heatmap(report)))
    if report.held:
        out += held.figures(report.held)
    if report.actuals:
        out += actuals.figures(report.actuals)
    return out


def render(report: Report) -> list[Chart]:
    return [Chart(key, title, _png(fig)) for key, title, fig in figures(report)]
