"""``rte simulate`` through click: table, JSON, sweep, plot and one-line errors."""

import builtins
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rte.commands.simulate import simulate_cmd

FAST = ["--nodes", "6", "--pods", "60", "--burst", "10/20s", "--seed", "3"]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(simulate_cmd, list(args))


def test_the_default_output_is_a_table() -> None:
    result = invoke(*FAST, "--cache", "reserve")
    assert result.exit_code == 0, result.output
    assert "TopologyAffinityErrors" in result.stdout
    assert "pending p50 / p90 / p99" in result.stdout


def test_json_output_is_reproducible_apart_from_timing() -> None:
    first = json.loads(invoke(*FAST, "-o", "json", "--series").stdout)
    second = json.loads(invoke(*FAST, "-o", "json", "--series").stdout)
    assert first.pop("timing")["wall_seconds"] > 0
    second.pop("timing")
    assert first == second
    assert first["config"]["nodes"] == 6 and first["counters"]["pods_created"] == 60
    assert set(first["series"]) == {"t", "pending", "running", "tae", "refused"}
    by_shape = first["pending_seconds_by_shape"]
    assert set(by_shape) == {"2c-4Gi", "4c-8Gi", "8c-16Gi", "16c-32Gi"}
    assert sum(v["scheduled"] for v in by_shape.values()) == first["counters"]["pods_scheduled"]


def test_durations_are_parsed_from_the_flags() -> None:
    doc = json.loads(invoke(*FAST, "-o", "json", "--agent-interval", "1m", "--admit-delay", "250ms").stdout)
    assert doc["config"]["agent_interval"] == 60.0
    assert doc["config"]["admit_delay"] == 0.25


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-interval", "soon"], "--agent-interval: 'soon' is not a duration"),
        (["--shape", "2x32c"], "--shape: '2x32c' does not read"),
        (["--burst", "many"], "--burst: 'many' is not N/T"),
        (["--sweep-caches", "none,lru"], "--sweep-caches"),
        (["--nodes", "0"], "--nodes: must be at least 1"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_2(args: list[str], message: str) -> None:
    result = invoke(*FAST, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("rte: error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_sweep_prints_one_row_per_combination() -> None:
    result = invoke(
        *FAST, "--sweep-nodes", "3,6", "--sweep-intervals", "1s,60s", "--sweep-caches", "none,reserve,discard"
    )
    assert result.exit_code == 0, result.output
    rows = result.stdout.strip().splitlines()[2:]
    assert len(rows) == 2 * 2 * 3
    assert "simulated 3 nodes, agent 1s, cache none" in result.stderr


def test_sweep_json_scales_the_workload_with_the_cluster() -> None:
    result = invoke(
        *FAST, "--sweep-nodes", "3,12", "--sweep-intervals", "10s", "--sweep-caches", "none", "-o", "json"
    )
    runs = json.loads(result.stdout)["runs"]
    assert [(r["nodes"], r["pods"]) for r in runs] == [(3, 30), (12, 120)]


def test_plot_writes_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "run.png"
    assert invoke(*FAST, "--plot", str(target)).exit_code == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sweep = tmp_path / "sweep.png"
    result = invoke(*FAST, "--sweep-nodes", "3", "--sweep-intervals", "1s,10s", "--plot", str(sweep))
    assert result.exit_code == 0, result.output
    assert sweep.read_bytes()[:4] == b"\x89PNG"


def test_plot_without_matplotlib_is_a_clear_one_line_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    result = invoke(*FAST, "--plot", str(tmp_path / "x.png"))
    assert result.exit_code == 1
    assert (
        result.stderr
        == "rte: error: --plot needs matplotlib: pip install 'rte[plot]' (or pip install matplotlib)\n"
    )
    assert not (tmp_path / "x.png").exists()
