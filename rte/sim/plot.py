"""PNG plots of a run or a sweep. matplotlib is the optional ``plot`` extra, imported lazily."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rte.errors import RteError
from rte.sim.result import SimResult
from rte.sim.sweep import SweepRun


class PlotUnavailableError(RteError):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never needs a display
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailableError(
            "--plot needs matplotlib: pip install 'rte[plot]' (or pip install matplotlib)"
        ) from e
    return plt


def plot_run(result: SimResult, path: str) -> None:
    """Write :func:`run_figure` to ``path``."""
    plt = _pyplot()
    fig = run_figure(result)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_figure(result: SimResult) -> Any:
    """Pending and refused pods and cumulative TAEs over time, and the pending-time CDF (per
    priority class too, with the preemption counters, when the run has a priority mix).

    The series keep each sample period's peak (:mod:`rte.sim.series`), drawn as steps so a burst
    stands as high as it was. The TAE axis counts whole errors from 0; a run without any says so
    rather than drawing a flat line on an invented scale.
    """
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    s = result.series
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7))
    top.step(s["t"], s["pending"], where="post", label="pending pods (peak per sample)")
    top.step(s["t"], s["refused"], where="post", label="refused, waiting to retry (peak per sample)")
    top.set_xlabel("simulated time (s)")
    top.set_ylabel("pods")
    top.set_ylim(bottom=0)
    tae = top.twinx()
    total = int(max(s["tae"], default=0))
    tae_label = "TopologyAffinityErrors (cumulative)" if total else "TopologyAffinityErrors: none"
    tae.step(s["t"], s["tae"], where="post", color="tab:red", label=tae_label)
    tae.set_ylabel("TAE")
    tae.set_ylim(0, max(total, 1) * 1.05)
    tae.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if not total:
        tae.set_yticks([0])
    lines = top.get_legend_handles_labels()
    more = tae.get_legend_handles_labels()
    top.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize="small")
    cfg = result.config
    top.set_title(
        f"{cfg['nodes']} nodes, {cfg['pods']} pods, cache {cfg['cache']},"
        f" agent every {cfg['agent_interval']:g} s"
    )
    values = result.pending_times
    if values:
        n = len(values)
        bottom.plot(values, [(i + 1) / n for i in range(n)], label="every pod")
        if values[-1] > 10 * max(values[0], 0.1):
            bottom.set_xscale("symlog", linthresh=1.0)
    by_priority = result.pending_by_priority
    if len(by_priority) > 1:  # one curve per priority class, the preemption counters beside them
        for name, times in by_priority.items():
            if times:
                bottom.plot(
                    times, [(i + 1) / len(times) for i in range(len(times))], label=f"priority {name}"
                )
        c = result.counters
        bottom.legend(
            loc="lower right",
            fontsize="small",
            title=f"preemption {cfg.get('preemption', 'off')}: {c.preemptions} nominations,"
            f" {c.victims} victims, {c.false_evictions} false evictions",
            title_fontsize="small",
        )
    bottom.set_xlabel("pending time, creation to admission (s)")
    bottom.set_ylabel("fraction of pods")
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def plot_sweep(runs: Sequence[SweepRun], path: str) -> None:
    """TAE count and p99 pending time per agent interval, one line per (cache, nodes)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    groups: dict[tuple[str, int], list[SweepRun]] = {}
    for r in runs:
        groups.setdefault((r.cache, r.nodes), []).append(r)
    for (cache, nodes), group in groups.items():
        xs = [r.interval for r in group]
        label = f"{cache}, {nodes} nodes"
        left.plot(xs, [r.result.counters.topology_affinity_errors for r in group], marker="o", label=label)
        right.plot(xs, [r.result.pending_summary()["p99"] or 0.0 for r in group], marker="o", label=label)
    for ax, title in ((left, "TopologyAffinityErrors"), (right, "pending time p99 (s)")):
        ax.set_xlabel("agent interval (s)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
