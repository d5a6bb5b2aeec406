"""``rte simulate``: run the cluster simulator (one run, or the headline sweep) and report.

:func:`simulate` is the logic; :data:`simulate_cmd` is the click command to register in the CLI
group (``main.add_command(simulate_cmd)``). This module imports only click and the settings
mechanism at load time, so registering it keeps ``rte --help`` fast; the scenario's settings
(:mod:`rte.sim.scenario`) load when the command's flags are first needed, the simulator when it
runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from rte.commands.errors import reports_errors
from rte.commands.options import SettingsCommand, setting_flags
from rte.errors import InputError

if TYPE_CHECKING:
    from rte.settings.schema import Schema
    from rte.sim.config import SimConfig
    from rte.sim.scenario import Scenario
    from rte.sim.sweep import SweepRun


def simulate(
    config: SimConfig,
    *,
    output: str = "table",
    plot: str | None = None,
    series: bool = False,
    sweep: bool = False,
    sweep_nodes: Sequence[int] | None = None,
    sweep_intervals: Sequence[float] | None = None,
    sweep_caches: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    quiet: bool = False,
) -> None:
    """Run one simulation, or the sweep (``sweep`` or any ``sweep_*`` given), and print the outcome.

    Progress goes to ``err`` (a bar on a terminal, a line every few seconds otherwise) unless
    ``quiet``; ``out`` gets only the table or the JSON.
    """
    from rte.sim import sweep as sw

    out = out or sys.stdout
    err = err or sys.stderr
    if plot is not None:
        check_plot_target(plot)
    if not (sweep or sweep_nodes or sweep_intervals or sweep_caches):
        from rte.sim.engine import run_simulation
        from rte.sim.progress import Progress

        result = run_simulation(config, None if quiet else Progress(err))
        if output == "json":
            out.write(json.dumps(result.to_dict(series=series), indent=1) + "\n")
        else:
            out.write(result.table() + "\n")
        if plot is not None:
            from rte.sim.plot import plot_run

            plot_run(result, plot)
            err.write(f"rte: plot written to {plot}\n")
        return

    def progress(done: SweepRun) -> None:
        if quiet:
            return
        r = done.row()
        err.write(
            f"rte: simulated {r['nodes']} nodes, agent {r['agent_interval']:g}s, cache {r['cache']}:"
            f" {r['tae']} TAE, p99 {sw.format_seconds(r['pending_p99'])} s ({r['wall_seconds']} s)\n"
        )

    runs = sw.sweep(
        config,
        intervals=sweep_intervals or sw.DEFAULT_INTERVALS,
        caches=sweep_caches or sw.DEFAULT_CACHES,
        nodes=sweep_nodes or sw.DEFAULT_NODES,
        progress=progress,
    )
    if output == "json":
        doc: dict[str, Any] = {"base": config.to_dict(), "runs": [r.row() for r in runs]}
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        out.write(sw.sweep_table(runs) + "\n")
    if plot is not None:
        from rte.sim.plot import plot_sweep

        plot_sweep(runs, plot)
        err.write(f"rte: plot written to {plot}\n")


def _scenario_schema() -> Schema[Scenario]:
    from rte.sim.scenario import SCENARIO_SCHEMA

    return SCENARIO_SCHEMA


def check_plot_target(path: str) -> None:
    """Fail before a long run, not after it: matplotlib must be there and write this file type."""
    from rte.sim.plot import _pyplot

    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lower().lstrip(".")
    supported = FigureCanvasBase.get_supported_filetypes()
    if suffix and suffix not in supported:
        raise InputError(
            "--plot", f"{path}: cannot write .{suffix} files; use one of .{', .'.join(sorted(supported))}"
        )
    parent = Path(path).parent
    if not parent.is_dir():
        raise InputError("--plot", f"{path}: no such directory: {parent}")


@click.command(
    "simulate",
    cls=SettingsCommand,
    schema=_scenario_schema,
    config_help="Scenario file (YAML, as --dump-config prints it): runs the same simulation.",
    short_help="Simulate a cluster: TopologyAffinityErrors against agent cadence.",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"], case_sensitive=False),
    default="table",
    show_default=True,
    help="A table, or the whole result as one JSON object.",
)
@click.option("--series", is_flag=True, help="JSON: include the sampled time series (each point a peak).")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="No progress on stderr (by default a bar on a terminal, else a line every 5 s).",
)
@click.option(
    "--plot",
    default=None,
    metavar="FILE",
    help="Also write a plot, its format from the extension (.png; needs matplotlib: the 'plot' extra).",
)
def simulate_cmd(**options: Any) -> None:
    """Simulate a cluster: NUMA-aware scheduling against node agents updating at a given cadence.

    Counts TopologyAffinityErrors, pending times, NRT writes and reserve-cache resyncs, using the
    real agent accounting and the real consumer Filter, Score and caches.

    The scenario comes from defaults < --config FILE < RTE_SIMULATE_* environment < flags;
    --dump-config prints it as a file that --config runs again.
    """
    reports_errors(_run_command)(**options)


def _run_command(
    config_file: str | None,
    dump_config: bool,
    output: str,
    series: bool,
    plot: str | None,
    quiet: bool,
    **options: Any,
) -> None:
    from rte.settings.loader import load, render_settings

    schema = _scenario_schema()
    scenario = load(schema, config_file=config_file, flags=setting_flags(schema, options))
    if dump_config:
        title = "rte simulate scenario: `rte simulate --config FILE` runs it again."
        sys.stdout.write(render_settings(schema, scenario, title=title))
        return
    simulate(
        scenario.run_config(),
        output=output.lower(),
        plot=plot,
        series=series,
        sweep=scenario.sweeping,
        sweep_nodes=scenario.sweep_nodes or None,
        sweep_intervals=scenario.sweep_intervals or None,
        sweep_caches=scenario.sweep_caches or None,
        quiet=quiet,
    )


if __name__ == "__main__":  # pragma: no cover
    simulate_cmd()
