"""The report's charts: matplotlib (Agg, no display) rendered to PNG bytes, embedded in the HTML as base64."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from capacity.finance.model import CLOUDS, OPTIONS, Report

COLOURS = {"aws": "#ff9900", "gcp": "#4285f4", "azure": "#008ad7", "on_demand": "#5b6770", "spot": "#8bc34a",
           "commit_1y": "#7e57c2", "commit_3y": "#311b92"}


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


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _stacked(report: Report, by: dict[str, dict[str, float]], keys: tuple[str, ...], title: str) -> bytes:
    buckets = report.buckets
    fig, ax = plt.subplots(figsize=(11, 4.2))
    bottom = np.zeros(len(buckets))
    for key in keys:
        values = np.array([by.get(b, {}).get(key, 0.0) for b in buckets])
        if values.any():
            ax.bar(buckets, values, bottom=bottom, label=key, color=COLOURS.get(key))
            bottom += values
    ax.set_title(title)
    ax.yaxis.set_major_formatter(FuncFormatter(_usd))
    ax.tick_params(axis="x", rotation=45)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def _fan(report: Report) -> bytes:
    fig, axes = plt.subplots(1, len(report.fans), figsize=(3.2 * len(report.fans) + 1, 3.6), squeeze=False)
    for ax, fan in zip(axes[0], report.fans, strict=True):
        n = len(fan.history_months)
        x_hist = np.arange(n)
        x_fut = np.arange(n, n + len(fan.months))
        ax.plot(x_hist, np.array(fan.history_gpu_hours) / 1e3, color="#333", label="history")
        ax.fill_between(x_fut, np.array(fan.p50) / 1e3, np.array(fan.p90) / 1e3, color="#4285f4", alpha=0.2,
                        label="P50-P90")
        ax.fill_between(x_fut, np.array(fan.p50) / 1e3, np.array(fan.p80) / 1e3, color="#4285f4", alpha=0.35,
                        label="P50-P80")
        ax.plot(x_fut, np.array(fan.p50) / 1e3, color="#1a4fa0", label="P50")
        labels = fan.history_months + fan.months
        step = max(1, len(labels) // 6)
        ax.set_xticks(range(0, len(labels), step), labels[::step], rotation=45, fontsize=7)
        ax.set_title(fan.gpu)
        ax.set_ylabel("thousand GPU-hours / month", fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle("Demand forecast by GPU (sum over teams of each series' quantiles)")
    return _png(fig)


def _heatmap(report: Report) -> bytes:
    rows = report.headroom
    data = np.array([[(u / h.quota_gpus if h.quota_gpus > 0 else (np.inf if u > 0 else 0.0)) for u in h.used_gpus]
                     for h in rows])
    shown = np.clip(np.nan_to_num(data, posinf=1.5), 0, 1.5)
    fig, ax = plt.subplots(figsize=(11, 0.38 * len(rows) + 1.6))
    image = ax.imshow(shown, cmap="RdYlGn_r", vmin=0, vmax=1.2, aspect="auto")
    ax.set_yticks(range(len(rows)), [h.label for h in rows], fontsize=8)
    ax.set_xticks(range(len(report.months)), report.months, rotation=45, fontsize=8)
    for i, h in enumerate(rows):
        for j, left in enumerate(h.headroom()):
            ax.text(j, i, f"{left:,.0f}", ha="center", va="center", fontsize=6)
    fig.colorbar(image, ax=ax, label="share of quota used")
    ax.set_title("Quota headroom: GPUs left per month (colour: share of quota used; red beyond 100 %)")
    return _png(fig)


def _budget(report: Report) -> bytes:
    assert report.variance is not None
    plan = [sum(report.team_month.get((m, t.team), 0.0) for t in report.teams) for m in report.months]
    budget = [sum(v.budget_usd for v in report.variance if v.month == m) for m in report.months]
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.bar(report.months, plan, color="#4285f4", label="plan")
    ax.plot(report.months, budget, color="#d32f2f", marker="o", label="budget")
    ax.yaxis.set_major_formatter(FuncFormatter(_usd))
    ax.tick_params(axis="x", rotation=45)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Monthly spend versus budget (commitment charges spread over their terms)")
    return _png(fig)


def render(report: Report) -> list[Chart]:
    """Every chart the report has data for, in the order the HTML shows them."""
    charts = [Chart("by_cloud", "Monthly spend by cloud", _stacked(report, report.by_cloud, CLOUDS,
                                                                     "Monthly spend by cloud")),
              Chart("by_option", "Monthly spend by purchase option",
                    _stacked(report, report.by_option, OPTIONS, "Monthly spend by purchase option"))]
    if report.variance is not None:
        charts.append(Chart("budget", "Spend versus budget", _budget(report)))
    if report.fans:
        charts.append(Chart("forecast", "Demand forecast", _fan(report)))
    if report.headroom:
        charts.append(Chart("headroom", "Quota headroom", _heatmap(report)))
    return charts
