"""Progress of ``rte simulate`` on stderr, peaks kept by the sampled series, and what the plot shows."""

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from rte.commands.simulate import simulate_cmd
from rte.sim.config import SimConfig
from rte.sim.engine import run_simulation
from rte.sim.progress import Point, Progress
from rte.sim.result import SimResult
from tests.helpers.clock import FakeClock

FAST = ["--nodes", "6", "--pods", "60", "--burst", "10/20s", "--seed", "3"]


def test_without_a_terminal_a_line_is_written_every_few_seconds() -> None:
    clock = FakeClock()
    stream = io.StringIO()
    progress = Progress(stream, clock=clock, period=5.0)
    clock.advance(1.0)
    progress.update(Point(100.0, 1000.0, 10, 300, 4096))
    assert stream.getvalue() == ""  # too soon
    clock.advance(4.0)
    progress.update(Point(250.0, 1000.0, 40, 300, 8192))
    assert stream.getvalue() == "rte: simulated 250 s, 40/300 pods scheduled, 1,638 events/s\n"
    progress.done(Point(900.0, 1000.0, 300, 300, 10000))
    assert (
        stream.getvalue().splitlines()[-1] == "rte: simulated 900 s, 300/300 pods scheduled, 2,000 events/s"
    )


def test_on_a_terminal_a_bar_is_redrawn_in_place_and_ends_the_line() -> None:
    clock = FakeClock()
    stream = io.StringIO()
    progress = Progress(stream, terminal=True, clock=clock)
    clock.advance(1.0)
    progress.update(Point(500.0, 1000.0, 75, 300, 1000))
    text = stream.getvalue()
    assert text.startswith("\r[") and "50%" in text and "75/300 pods scheduled" in text and "\n" not in text
    progress.done(Point(1000.0, 1000.0, 300, 300, 2000))
    assert stream.getvalue().endswith("\n") and "100%" in stream.getvalue()


def test_the_cli_keeps_stdout_for_the_json_and_quiet_silences_progress(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate_cmd, [*FAST, "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counters"]["pods_created"] == 60
    assert "60/60 pods scheduled" in result.stderr
    quiet = CliRunner().invoke(simulate_cmd, [*FAST, "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_the_cli_says_where_the_plot_went(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "run.png"
    result = CliRunner().invoke(simulate_cmd, [*FAST, "-q", "--plot", str(target)])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"rte: plot written to {target}\n"


# One node; 3 pods arrive together at t=10 and are admitted within a second, which ends the run.
BURST = SimConfig(
    nodes=1,
    pods=3,
    shapes="2x8c-16Gi",
    pod_mix="2c-1Gi",
    rate=0.0,
    burst="3/10s",
    mean_duration=1000.0,
    max_time=500.0,
    sample_period=100.0,
)


def test_a_burst_between_two_samples_keeps_its_peak() -> None:
    series = run_simulation(BURST).series
    # The run ends once every pod runs, with a last sample; no pod is pending at either instant.
    assert series["t"][0] == 0.0 and 10.0 < series["t"][1] < 100.0
    assert series["pending"] == [0, 3]  # the peak since the sample at t=0


def figure_of(result: SimResult) -> object:
    pytest.importorskip("matplotlib")
    from rte.sim.plot import run_figure

    return run_figure(result)


def test_the_tae_axis_shows_zero_when_there_are_none() -> None:
    fig = figure_of(run_simulation(BURST))
    tae_axis = fig.axes[2]  # type: ignore[attr-defined]
    assert list(tae_axis.get_yticks()) == [0]
    assert tae_axis.get_ylim()[1] < 2
    assert tae_axis.get_lines()[0].get_label() == "TopologyAffinityErrors: none"


def test_the_plot_draws_the_burst_peak_and_counts_errors_in_whole_numbers() -> None:
    # Two zones of 3 CPUs: the third 2-CPU pod of the burst cannot be aligned (one TAE per retry).
    tight = replace(
        BURST, shapes="2x3c-8Gi", reserved_cpus=0, reserved_memory=0, max_time=60.0, sample_period=30.0
    )
    result = run_simulation(tight)
    assert result.counters.topology_affinity_errors > 0
    fig = figure_of(result)
    top, _, tae_axis = fig.axes  # type: ignore[attr-defined]
    assert max(top.get_lines()[0].get_ydata()) == 3
    assert all(float(t).is_integer() for t in tae_axis.get_yticks())
    assert tae_axis.get_ylim()[1] >= result.counters.topology_affinity_errors
