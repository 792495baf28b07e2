"""Plots of the evidence summary, rendered with matplotlib's Agg canvas (no display needed).

Every figure is saved as PNG (150 dpi) and SVG with reproducible bytes: no dates or software
stamps in the metadata and a fixed `svg.hashsalt`, so equal inputs give equal files (for one
matplotlib version). Figures are built on `matplotlib.figure.Figure` directly, never through
pyplot, so nothing global (backend, open-figure registry) changes in the calling process.

- success_curves: held-out greedy success after each update, mean over seeds, band min..max; every
  trained method starts at update 0 from its seed's base run (the shared starting policy).
- final_metrics: final metrics per method with the 95% t intervals over seeds as error bars (the
  task bootstrap's with one seed).
- ppo_diagnostics: PPO and PAPPO clip fraction, approximate KL and critic explained variance per
  update (mean over the update's minibatch steps, then over seeds; band min..max over seeds).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from pappo.evidence.labels import SUMMARY_LABELS

if TYPE_CHECKING:
    from pappo.evidence.summary_models import Summary
    from pappo.experiment.report import RunReport

Key = tuple[int, str]
DPI = 150
RC: dict[str, Any] = {
    "svg.hashsalt": "pappo-summary",
    "svg.fonttype": "path",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
COLORS = {"base": "#7f7f7f", "rft": "#8c564b", "grpo": "#2ca02c", "ppo": "#1f77b4", "pappo": "#d62728"}
DIAGNOSTICS = (
    ("actor/pg_clipfrac", "clip fraction"),
    ("actor/ppo_kl", "approx. KL (old || new)"),
    ("critic/vf_explained_var", "critic expl. variance"),
)
EV_KEY, EV_FLOOR = "critic/vf_explained_var", -1.0


def _color(method: str) -> str:
    return COLORS.get(method, "#000000")


def _new_figure(width: float = 7.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_bytes(fig: Figure) -> tuple[bytes, bytes]:
    """(PNG, SVG) bytes of `fig` without timestamps or software stamps."""
    png, svg = io.BytesIO(), io.BytesIO()
    with matplotlib.rc_context(RC):
        fig.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return png.getvalue(), svg.getvalue()


def _band(xs: Sequence[int], per_x: Mapping[int, list[float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = np.array([np.mean(per_x[x]) for x in xs])
    lo = np.array([np.min(per_x[x]) for x in xs])
    hi = np.array([np.max(per_x[x]) for x in xs])
    return mean, lo, hi


def _eval_points(reports: Mapping[Key, RunReport], method: str) -> dict[int, list[float]]:
    """{updates done: success of each seed's eval at that point}. A trained method's curve starts at
    update 0 with its seed's base run: the untrained adapters are the identity, so every method
    starts from that very policy, evaluated on the same tasks."""
    out: dict[int, list[float]] = {}
    for (seed, m), report in sorted(reports.items()):
        if m != method:
            continue
        evals = list(report.evals)
        start = reports.get((seed, "base"))
        if method != "base" and start is not None and all(e.update != 0 for e in evals):
            evals = [*start.evals, *evals]
        for e in evals:
            out.setdefault(e.update, []).append(e.result.success.mean)
    return out


def success_curves(reports: Mapping[Key, RunReport], methods: Sequence[str]) -> Figure:
    """Held-out greedy success per update and method; single-point methods drawn as a level line."""
    fig = _new_figure()
    with matplotlib.rc_context(RC):
        ax = fig.add_subplot()
        points = {m: _eval_points(reports, m) for m in methods}
        all_x = sorted({x for p in points.values() for x in p}) or [0]
        span = (min(all_x), max(max(all_x), min(all_x) + 1))
        for m in methods:
            xs = sorted(points[m])
            if not xs:
                continue
            mean, lo, hi = _band(xs, points[m])
            if len(xs) == 1:  # base: the starting policy, a reference level
                ax.hlines(mean[0], *span, colors=_color(m), linestyles="--", label=f"{m} (update {xs[0]})")
                ax.axhspan(lo[0], hi[0], color=_color(m), alpha=0.12, lw=0)
                continue
            ax.plot(xs, mean, marker="o", ms=4, color=_color(m), label=m)
            ax.fill_between(xs, lo, hi, color=_color(m), alpha=0.15, lw=0)
        ax.set(
            xlim=(span[0] - 0.2, span[1] + 0.2),
            ylim=(-0.02, 1.02),
            xlabel="Updates done (0 = starting policy)",
            ylabel="Held-out greedy success",
        )
        ax.set_title("Held-out success per update (mean over seeds; band: min–max over seeds)")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(loc="best", ncols=2)
    return fig


def final_metrics(summary: Summary) -> Figure:
    """Grouped bars of the rate metrics (left) and tool cost (right), 95% t intervals over seeds as error
    bars (the seed is the unit; with one seed the task bootstrap's, evaluation noise only)."""
    rates = ("success", "pass_at_k", "failed_edit_rate", "repeated_test_rate")
    fig = _new_figure()
    with matplotlib.rc_context(RC):
        left, right = fig.subplots(1, 2, width_ratios=[3, 1])
        n = max(1, len(summary.summaries))
        width = 0.8 / n
        for j, s in enumerate(summary.summaries):
            xs = np.arange(len(rates)) + (j - (n - 1) / 2) * width
            vals = [s.over_seeds.get(r, getattr(s, r)) for r in rates]
            err = np.array([[v.mean - v.lo for v in vals], [v.hi - v.mean for v in vals]])
            left.bar(
                xs, [v.mean for v in vals], width, yerr=err, capsize=2, color=_color(s.method), label=s.method
            )
            tc = s.over_seeds.get("tool_cost", s.tool_cost)
            right.bar(
                [j],
                [tc.mean],
                0.7,
                yerr=[[tc.mean - tc.lo], [tc.hi - tc.mean]],
                capsize=2,
                color=_color(s.method),
            )
        left.set_xticks(np.arange(len(rates)), [SUMMARY_LABELS[r] for r in rates], rotation=15)
        left.set(ylim=(0, 1.22), yticks=np.linspace(0, 1, 6), ylabel="Rate (mean over seeds)")
        over = "t interval over seeds" if len(summary.seeds) > 1 else "bootstrap over tasks, one seed"
        left.set_title(f"Final metrics (95% {over}, K = {summary.eval_samples})")
        left.legend(loc="upper center", ncols=min(n, 5), columnspacing=1.0, handlelength=1.2)
        right.set_xticks(range(len(summary.summaries)), [s.method for s in summary.summaries], rotation=45)
        right.set(ylabel="Weighted tool calls per task")
        right.set_title("Tool cost")
    return fig


def _diagnostic_points(reports: Mapping[Key, RunReport], method: str, key: str) -> dict[int, list[float]]:
    """{update index: per seed, the mean of `key` over the update's minibatch steps}."""
    out: dict[int, list[float]] = {}
    for (_, m), report in sorted(reports.items()):
        if m != method:
            continue
        for rec in report.updates:
            vals = [float(st[key]) for st in rec.get("steps", []) if key in st]
            if vals:
                out.setdefault(int(rec["update"]), []).append(float(np.mean(vals)))
    return out


def ppo_diagnostics(
    reports: Mapping[Key, RunReport], methods: Sequence[str] = ("ppo", "pappo")
) -> Figure | None:
    """Clip fraction, KL and explained variance per update for PPO and PAPPO; None without data."""
    data = {(m, k): _diagnostic_points(reports, m, k) for m in methods for k, _ in DIAGNOSTICS}
    if not any(data.values()):
        return None
    fig = _new_figure(7.0, 6.0)
    with matplotlib.rc_context(RC):
        axes = fig.subplots(3, 1, sharex=True)
        for ax, (key, label) in zip(axes, DIAGNOSTICS):
            if key == EV_KEY:
                _ev_panel(ax, reports, methods, label)
                continue
            for m in methods:
                pts = data[(m, key)]
                if pts:
                    xs = sorted(pts)
                    mean, lo, hi = _band(xs, pts)
                    ax.plot(xs, mean, marker="o", ms=3, color=_color(m), label=m)
                    ax.fill_between(xs, lo, hi, color=_color(m), alpha=0.15, lw=0)
            ax.set_ylabel(label)
        axes[0].set_title("PPO / PAPPO diagnostics per update (mean over minibatch steps and seeds)")
        axes[0].legend(loc="best")
        axes[-1].set_xlabel("Update index (0-based)")
        updates = [x for pts in data.values() for x in pts]
        axes[-1].set_xlim(min(updates) - 0.5, max(updates) + 0.5)  # one update: no fractional ticks
        axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    return fig


def _ev_panel(ax: Any, reports: Mapping[Key, RunReport], methods: Sequence[str], label: str) -> None:
    """Explained variance per seed (the bar is per seed: above 0 at the last update), one thin line
    each, on an axis cut at EV_FLOOR: a first update at -15 would flatten the rest to a line."""
    lowest, highest = 0.0, 0.2
    for m in methods:
        for key, report in sorted(reports.items()):
            pts = _diagnostic_points({key: report}, m, EV_KEY)  # this seed's, empty for another method
            if pts:
                xs = sorted(pts)
                ys = [pts[x][0] for x in xs]
                lowest, highest = min(lowest, *ys), max(highest, *ys)
                ax.plot(xs, ys, marker="o", ms=2.5, lw=1.0, color=_color(m), alpha=0.8)
    ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
    ax.set_ylim(max(lowest, EV_FLOOR) - 0.05, highest + 0.05)
    ax.set_ylabel(label)
    note = f"one line per seed; axis cut at {EV_FLOOR:g}" if lowest < EV_FLOOR else "one line per seed"
    ax.text(0.01, 0.04, note, transform=ax.transAxes, fontsize=7, color="0.3")


def render_plots(reports: Mapping[Key, RunReport], summary: Summary) -> dict[str, bytes]:
    """{file name: bytes} of every plot, PNG and SVG, in a fixed order."""
    figures = {
        "success_curves": success_curves(reports, summary.methods),
        "final_metrics": final_metrics(summary),
        "ppo_diagnostics": ppo_diagnostics(reports, [m for m in ("ppo", "pappo") if m in summary.methods]),
    }
    out: dict[str, bytes] = {}
    for name, fig in figures.items():
        if fig is not None:
            out[f"{name}.png"], out[f"{name}.svg"] = to_bytes(fig)
    return out
