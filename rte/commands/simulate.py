"""``rte simulate``: run the cluster simulator (one run, or the headline sweep) and report.

:func:`simulate` is the logic; :data:`simulate_cmd` is the click command to register in the CLI
group (``main.add_command(simulate_cmd)``). This module imports only click at load time, so
registering it keeps ``rte --help`` fast; the simulator is imported when the command runs.
Until it is registered, ``python -m rte.commands.simulate`` runs the same command.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import click

from rte.model.vocabulary import FingerprintMethod, InformerMode

if TYPE_CHECKING:
    from rte.sim.config import SimConfig
    from rte.sim.sweep import SweepRun


def _interval_list(text: str, option: str) -> tuple[float, ...]:
    from rte.sim.specs import parse_duration

    return tuple(parse_duration(part, option) for part in text.split(",") if part.strip())


def _int_list(text: str, option: str) -> tuple[int, ...]:
    from rte.errors import InputError

    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as e:
        raise InputError(option, f"{text!r} is not a comma-separated list of integers") from e
    if not values or any(v < 1 for v in values):
        raise InputError(option, f"{text!r}: give at least one positive integer")
    return values


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
) -> None:
    """Run one simulation, or the sweep (``sweep`` or any ``sweep_*`` given), and print the outcome."""
    from rte.sim import sweep as sw

    out = out or sys.stdout
    err = err or sys.stderr
    if plot is not None:
        from rte.sim.plot import _pyplot

        _pyplot()  # fail before a long run, not after it
    if not (sweep or sweep_nodes or sweep_intervals or sweep_caches):
        from rte.sim.engine import run_simulation

        result = run_simulation(config)
        if output == "json":
            out.write(json.dumps(result.to_dict(series=series), indent=1) + "\n")
        else:
            out.write(result.table() + "\n")
        if plot is not None:
            from rte.sim.plot import plot_run

            plot_run(result, plot)
        return

    def progress(done: SweepRun) -> None:
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


def _duration(value: str | None, option: str) -> float | None:
    from rte.sim.specs import parse_duration

    return None if value is None else parse_duration(value, option)


@click.command("simulate")
@click.option("--nodes", type=int, default=100, show_default=True, help="Cluster size.")
@click.option("--pods", type=int, default=2000, show_default=True, help="Pods created in the run.")
@click.option(
    "--shape",
    "shapes",
    default="2x32c-192Gi",
    show_default=True,
    help="Node shapes, e.g. '70%:2x32c-192Gi,30%:4x16c-128Gi+nic4'"
    " (zones x CPUs per zone, node memory, per-zone extras).",
)
@click.option(
    "--pod-mix",
    default="50%:2c-4Gi,25%:4c-8Gi,15%:8c-16Gi,10%:16c-32Gi",
    show_default=True,
    help="Guaranteed pod shapes, e.g. '80%:4c-8Gi,20%:2x2c-4Gi+nic1' (containers x per-container request).",
)
@click.option(
    "--policy",
    type=click.Choice(["single-numa-node", "restricted"]),
    default="single-numa-node",
    show_default=True,
)
@click.option("--scope", type=click.Choice(["container", "pod"]), default="container", show_default=True)
@click.option("--reserved-cpus", type=int, default=2, show_default=True, help="reservedSystemCPUs on zone 0.")
@click.option(
    "--agent-interval", default="10s", show_default=True, help="Agent update period (0: on every change)."
)
@click.option("--publish-delay", default="200ms", show_default=True, help="Agent read to apiserver write.")
@click.option(
    "--watch-delay", default="100ms", show_default=True, help="Apiserver write to the scheduler's store."
)
@click.option(
    "--cache",
    type=click.Choice(["none", "reserve", "discard"]),
    default="none",
    show_default=True,
    help="none = Passthrough, reserve = OverReserve with fingerprint resync, discard = DiscardReserved.",
)
@click.option("--resync-period", default="5s", show_default=True, help="Reserve cache resync period.")
@click.option(
    "--dirty-after",
    type=int,
    default=1,
    show_default=True,
    help="Filter failures in a row before a node is resynced.",
)
@click.option(
    "--no-follow-clean",
    is_flag=True,
    help="Reserve cache: clean nodes wait for a resync too (reference behaviour).",
)
@click.option(
    "--requeue-on-flush",
    is_flag=True,
    help="Reserve cache: a flush requeues unschedulable pods (not reference).",
)
@click.option(
    "--informer-mode",
    type=click.Choice([m.value for m in InformerMode], case_sensitive=False),
    default=InformerMode.DEDICATED.value,
    show_default=True,
)
@click.option(
    "--fingerprint-method",
    type=click.Choice([m.value for m in FingerprintMethod], case_sensitive=False),
    default=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value,
    show_default=True,
)
@click.option(
    "--strategy",
    type=click.Choice(["LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes"]),
    default="LeastAllocated",
    show_default=True,
)
@click.option("--schedule-cycle", default="5ms", show_default=True, help="Time one scheduling cycle takes.")
@click.option("--bind-latency", default="50ms", show_default=True, help="Reserve to bound.")
@click.option("--admit-delay", default="500ms", show_default=True, help="Bound to kubelet admission.")
@click.option(
    "--tae-backoff", default="1s", show_default=True, help="TopologyAffinityError to the replacement pod."
)
@click.option("--rate", type=float, default=None, help="Poisson arrivals per second [default: from --load].")
@click.option(
    "--load", type=float, default=0.7, show_default=True, help="Offered CPU load used to derive --rate."
)
@click.option("--burst", default=None, help="N/T: N pods at once every T, e.g. 200/60s.")
@click.option(
    "--duration", "mean_duration", default="300s", show_default=True, help="Mean pod run time (exponential)."
)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--max-time", default=None, help="Stop at this simulated time [default: last arrival + 30m].")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--series", is_flag=True, help="JSON: include the sampled time series.")
@click.option(
    "--plot", default=None, metavar="FILE", help="Also write a PNG plot (needs matplotlib: the 'plot' extra)."
)
@click.option(
    "--sweep",
    is_flag=True,
    help="Run the headline sweep (agent interval x cache x nodes) instead of one run.",
)
@click.option(
    "--sweep-nodes",
    default=None,
    help="Sweep cluster sizes [default: 100,1000]; pods and bursts scale along.",
)
@click.option("--sweep-intervals", default=None, help="Sweep agent intervals [default: 1s,10s,60s].")
@click.option("--sweep-caches", default=None, help="Sweep cache modes [default: none,reserve].")
@click.option("--verify", is_flag=True, hidden=True, help="Cross-check every memoised decision (slow).")
def simulate_cmd(**options: Any) -> None:
    """Simulate a cluster: NUMA-aware scheduling against node agents updating at a given cadence.

    Counts TopologyAffinityErrors, pending times, NRT writes and reserve-cache resyncs, using the
    real agent accounting and the real consumer Filter, Score and caches.
    """
    from rte.cli import reports_errors

    reports_errors(_run_options)(**options)


def _run_options(**o: Any) -> None:
    from rte.errors import InputError
    from rte.sim.config import CACHE_MODES, SimConfig

    config = SimConfig(
        nodes=o["nodes"],
        pods=o["pods"],
        shapes=o["shapes"],
        pod_mix=o["pod_mix"],
        policy=o["policy"],
        scope=o["scope"],
        reserved_cpus=o["reserved_cpus"],
        agent_interval=_duration(o["agent_interval"], "--agent-interval") or 0.0,
        publish_delay=_duration(o["publish_delay"], "--publish-delay") or 0.0,
        watch_delay=_duration(o["watch_delay"], "--watch-delay") or 0.0,
        cache=o["cache"],
        resync_period=_duration(o["resync_period"], "--resync-period") or 0.0,
        dirty_after_failures=o["dirty_after"],
        follow_clean_nodes=not o["no_follow_clean"],
        requeue_on_flush=o["requeue_on_flush"],
        informer_mode=InformerMode(o["informer_mode"]),
        fingerprint_method=FingerprintMethod(o["fingerprint_method"]),
        strategy=o["strategy"],
        schedule_cycle=_duration(o["schedule_cycle"], "--schedule-cycle") or 0.0,
        bind_latency=_duration(o["bind_latency"], "--bind-latency") or 0.0,
        admit_delay=_duration(o["admit_delay"], "--admit-delay") or 0.0,
        tae_backoff=_duration(o["tae_backoff"], "--tae-backoff") or 0.0,
        rate=o["rate"],
        load=o["load"],
        burst=o["burst"],
        mean_duration=_duration(o["mean_duration"], "--duration") or 0.0,
        seed=o["seed"],
        max_time=_duration(o["max_time"], "--max-time"),
        verify=o["verify"],
    )
    caches = None
    if o["sweep_caches"] is not None:
        caches = tuple(c.strip() for c in o["sweep_caches"].split(",") if c.strip())
        bad = [c for c in caches if c not in CACHE_MODES]
        if bad or not caches:
            raise InputError(
                "--sweep-caches", f"{o['sweep_caches']!r}: each must be one of {', '.join(CACHE_MODES)}"
            )
    simulate(
        config,
        output=o["output"],
        plot=o["plot"],
        series=o["series"],
        sweep=o["sweep"],
        sweep_nodes=_int_list(o["sweep_nodes"], "--sweep-nodes") if o["sweep_nodes"] else None,
        sweep_intervals=(
            _interval_list(o["sweep_intervals"], "--sweep-intervals") if o["sweep_intervals"] else None
        ),
        sweep_caches=caches,
    )


if __name__ == "__main__":  # pragma: no cover
    simulate_cmd()
