"""``kubectl-rte``: the views as a kubectl plugin, with kubectl's connection flags in either place.

kubectl runs ``kubectl-rte`` with the arguments that follow ``rte`` and its own environment, and
refuses flags before the plugin's name; so the plugin takes them after ``rte`` or after the
command, the command's winning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rte.cli import kubectl_main
from rte.testing.apiserver import FakeApiServer


def plugin(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(kubectl_main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def two_contexts(fake_apiserver: FakeApiServer, live_kubeconfig: Path, tmp_path: Path) -> Path:
    """A kubeconfig with context ``demo`` (the double, namespace telco) and ``gone`` (nothing listens)."""
    config = fake_apiserver.kubeconfig(namespace="telco")
    config["clusters"].append({"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"] = [
        {"name": "demo", "context": {**config["contexts"][0]["context"]}},
        {"name": "gone", "context": {"cluster": "gone", "user": "rte-fake"}},
    ]
    config["current-context"] = "gone"
    path = tmp_path / "two.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_flags_after_rte_or_after_the_command_mean_the_same(two_contexts: Path) -> None:
    before = plugin("--kubeconfig", str(two_contexts), "--context", "demo", "top", "worker-1")
    after = plugin("top", "worker-1", "--kubeconfig", str(two_contexts), "--context", "demo")
    assert before[0] == 0 and before == after
    assert before[1].splitlines()[1].startswith("worker-1   node-0")


def test_the_command_flag_wins_over_the_plugin_flag(two_contexts: Path) -> None:
    code, out, _ = plugin("--kubeconfig", str(two_contexts), "--context", "gone", "top", "--context", "demo")
    assert code == 0 and "worker-2" in out
    code, _, err = plugin("--kubeconfig", str(two_contexts), "top")  # the current context: nothing listens
    assert (
        code == 1
        and err == "rte: error: cannot reach the apiserver at http://127.0.0.1:9: Connection refused\n"
    )


def test_the_namespace_comes_from_n_in_either_place_or_the_context(two_contexts: Path) -> None:
    base = ("--kubeconfig", str(two_contexts), "--context", "demo")
    assert plugin(*base, "explain", "du-2")[0] == 0  # the context's namespace: telco
    assert plugin(*base, "-n", "default", "explain", "train-big")[0] == 0
    code, _, err = plugin(*base, "-n", "default", "explain", "du-2")
    assert code == 2 and err.startswith("rte: error: pod default/du-2: not found")
    assert plugin(*base, "-n", "default", "explain", "du-2", "-n", "telco")[0] == 0


def test_the_plugin_offers_the_cluster_views() -> None:
    assert sorted(kubectl_main.commands) == ["explain", "fit", "top"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_finds_and_runs_the_installed_plugin(live_kubeconfig: Path) -> None:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "kubectl-rte").exists():
        pytest.skip("the kubectl-rte console script is not installed (pip install -e .)")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(live_kubeconfig),
    }
    done = subprocess.run(
        ["kubectl", "rte", "top", "gpu-1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert [line.split()[:2] for line in done.stdout.splitlines()[1:]] == [
        ["gpu-1", "node-0"],
        ["gpu-1", "node-1"],
    ]
    done = subprocess.run(
        ["kubectl", "rte", "--kubeconfig", str(live_kubeconfig), "explain", "telco/du-2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "Fits NUMA-aligned on 2 of 4 node(s)" in done.stdout
