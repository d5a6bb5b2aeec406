"""``rte simulate`` through click: table, JSON, sweep, plot and one-line errors."""

import builtins
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rte.commands.simulate import simulate_cmd
from rte.sim.config import SWEEP_CACHES, SWEEP_INTERVALS, SWEEP_NODES

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


def test_the_cpu_manager_option_distribute_cpus_across_numa_is_a_flag() -> None:
    doc = json.loads(
        invoke(*FAST, "-o", "json", "--distribute-cpus-across-numa", "--policy", "restricted").stdout
    )
    assert doc["config"]["distribute_cpus_across_numa"] is True
    assert doc["counters"]["pods_created"] == 60
    assert json.loads(invoke(*FAST, "-o", "json").stdout)["config"]["distribute_cpus_across_numa"] is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-interval", "soon"], "--agent-interval: not a duration: 'soon'"),
        (["--duration", "0s"], "--duration: must be greater than 0, got 0"),
        (["--nodes", "10000000000"], "--nodes: must be at most 50,000, got 10,000,000,000"),
        (["--pods", "10000000000"], "--pods: must be at most 2,000,000, got 10,000,000,000"),
        (["--sweep-nodes", "40000", "--pods", "2000000"], "--sweep-nodes: 40000 nodes scale the pods to"),
        (["--reserved-cpus", "33"], "--reserved-cpus: 33 exceeds the 32 CPUs of a zone of node shape"),
        (["--shape", "2x1c-4Gi"], "--reserved-cpus: 2 exceeds the 1 CPUs of a zone"),
        (["--shape", "2x32c"], "--shape: '2x32c' does not read"),
        (["--burst", "many"], "--burst: 'many' is not N/T"),
        (["--sweep-caches", "none,lru"], "--sweep-caches"),
        (["--nodes", "0"], "--nodes: must be at least 1"),
        # policy_options.go ValidateStaticPolicyOptions: the kubelet does not start so.
        (
            ["--align-by-socket"],
            "--align-by-socket: the kubelet refuses align-by-socket with single-numa-node",
        ),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_exit_2(args: list[str], message: str) -> None:
    result = invoke(*FAST, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("rte: error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_align_by_socket_runs_on_zones_sharing_sockets_without_topology_affinity_errors() -> None:
    args = ["--shape", "4x8c2t2s-32Gi", "--policy", "restricted", "--align-by-socket", "--cache", "reserve"]
    doc = json.loads(invoke(*FAST, *args, "-o", "json").stdout)
    assert doc["config"]["align_by_socket"] is True
    assert doc["counters"]["pods_scheduled"] > 0
    assert doc["counters"]["topology_affinity_errors"] == 0


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


def test_the_sweep_honours_the_one_run_settings_given_and_its_help_names_its_defaults() -> None:
    """Issue #24: `--sweep` ignored --nodes (it ran 100 and 1000 nodes), and its help promised 2
    caches where it ran 4."""
    result = invoke(*FAST, "--sweep", "--agent-interval", "1s", "--cache", "reserve", "-o", "json")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    assert [(r["nodes"], r["agent_interval"], r["cache"]) for r in runs] == [(6, 1.0, "reserve")]
    headline = invoke("--sweep", "--dump-config").stdout
    assert "sweep_nodes: [100, 1000]" in headline
    assert "sweep_caches: [none, reference-reserve, reserve, oracle]" in headline
    helped = " ".join(CliRunner().invoke(simulate_cmd, ["--help"], terminal_width=500).stdout.split())
    assert "else 100,1000" in helped and "else 1s,10s,60s" in helped
    assert f"else {','.join(SWEEP_CACHES)}" in helped
    assert (SWEEP_NODES, SWEEP_INTERVALS) == ((100, 1000), (1.0, 10.0, 60.0))


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


TUNED = [
    *FAST,
    "--cache=Reserve",
    "--informer-mode=shared",
    "--strategy=mostallocated",
    "--agent-interval=0.7s",
    "--publish-delay=1m30s",
    "--dirty-after-failures=2",
    "--no-follow-clean-nodes",
    "--policy=restricted",
    "--scope=pod",
    "--load=0.8",
]


def test_a_dumped_scenario_runs_the_same_simulation_again(tmp_path: Path) -> None:
    dumped = invoke(*TUNED, "--dump-config")
    assert dumped.exit_code == 0, dumped.output
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(dumped.stdout, encoding="utf-8")
    again = invoke("--config", str(scenario), "--dump-config").stdout
    assert yaml.safe_load(again) == yaml.safe_load(dumped.stdout)
    by_flags = json.loads(invoke(*TUNED, "-o", "json", "--series").stdout)
    by_file = json.loads(invoke("--config", str(scenario), "-o", "json", "--series").stdout)
    by_flags.pop("timing"), by_file.pop("timing")
    assert by_file == by_flags
    assert by_file["config"]["informer_mode"] == "Shared"  # canonical spelling, whatever was typed
    assert by_file["config"]["agent_interval"] == 0.7
    assert (by_file["config"]["dirty_after_failures"], by_file["config"]["follow_clean_nodes"]) == (2, False)


def test_a_dumped_sweep_scenario_sweeps_again(tmp_path: Path) -> None:
    sweep = [*FAST, "--sweep-nodes", "3,6", "--sweep-intervals", "1s,0.5", "--sweep-caches", "none"]
    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(invoke(*sweep, "--dump-config").stdout, encoding="utf-8")
    text = scenario.read_text(encoding="utf-8")
    assert "sweep_nodes: [3, 6]" in text and "sweep_intervals: [1s, 500ms]" in text
    by_flags = json.loads(invoke(*sweep, "-o", "json").stdout)
    by_file = json.loads(invoke("--config", str(scenario), "-o", "json").stdout)
    for doc in (by_flags, by_file):
        for run in doc["runs"]:
            run.pop("wall_seconds")
    assert by_file == by_flags
    assert [(r["nodes"], r["agent_interval"]) for r in by_file["runs"]] == [
        (3, 1.0),
        (3, 0.5),
        (6, 1.0),
        (6, 0.5),
    ]


def test_the_scenario_reads_rte_simulate_environment_variables() -> None:
    env = {"RTE_SIMULATE_NODES": "6", "RTE_SIMULATE_PODS": "60", "RTE_SIMULATE_CACHE": "DISCARD"}
    result = CliRunner().invoke(simulate_cmd, ["--seed", "3", "-o", "json"], env=env)
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)["config"]
    assert (config["nodes"], config["pods"], config["cache"]) == (6, 60, "discard")


def test_the_former_flag_spellings_still_work() -> None:
    doc = json.loads(invoke(*FAST, "-o", "json", "--dirty-after", "3", "--no-follow-clean").stdout)
    assert (doc["config"]["dirty_after_failures"], doc["config"]["follow_clean_nodes"]) == (3, False)


def test_an_unknown_key_in_a_scenario_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("nodes: 6\nnode_count: 7\n", encoding="utf-8")
    result = invoke("--config", str(scenario))
    assert result.exit_code == 2
    assert result.stderr == f"rte: error: {scenario}: node_count: unknown setting\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("x.xyz", "x.xyz: cannot write .xyz files; use one of "),
        ("no/such/dir/x.png", "no/such/dir/x.png: no such directory: no/such/dir"),
    ],
)
def test_a_plot_that_cannot_be_written_fails_before_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, target: str, message: str
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    result = invoke(*FAST, "--plot", target)
    assert result.exit_code == 2
    assert result.stdout == ""  # nothing simulated
    assert result.stderr.startswith(f"rte: error: --plot: {message}")
    assert result.stderr.count("\n") == 1


def test_the_scheduler_follows_the_kubelets_rules_unless_told_the_reference() -> None:
    default = json.loads(invoke(*FAST, "-o", "json").stdout)
    reference = json.loads(invoke(*FAST, "-o", "json", "--compat", "Reference").stdout)
    assert (default["config"]["compat"], reference["config"]["compat"]) == ("kubelet", "reference")
    bad = invoke(*FAST, "--compat", "plugin")
    assert bad.exit_code == 2 and "--compat: 'plugin' is not one of kubelet, reference" in bad.output


def test_the_rules_reach_the_scheduler() -> None:
    from rte.model.vocabulary import Compat
    from rte.sim.config import SimConfig
    from rte.sim.engine import Simulation

    sim = Simulation(SimConfig(nodes=2, pods=4, compat="reference"))  # type: ignore[arg-type]
    assert {shape.compat for shape in sim.scheduler.shapes} == {Compat.REFERENCE}
    assert {shape.compat for shape in Simulation(SimConfig(nodes=2, pods=4)).scheduler.shapes} == {
        Compat.KUBELET
    }
