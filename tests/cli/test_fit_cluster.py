"""``rte fit`` reading the NRTs, the Nodes and possibly the pod from a cluster (the apiserver double)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rte.cli import main
from rte.testing.apiserver import FakeApiServer
from tests.helpers.paths import REPO

POD = str(REPO / "examples" / "pod-guaranteed.yaml")


def fit(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["fit", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def export(api: FakeApiServer, plural: str, path: Path) -> str:
    """The cluster's objects of ``plural``, by name, as one YAML file of several documents."""
    objects = sorted(api.list_objects(plural), key=lambda o: o["metadata"]["name"])
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_a_manifest_gets_the_verdicts_file_mode_gives_on_the_same_objects(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path, tmp_path: Path
) -> None:
    code, live, err = fit("--kubeconfig", str(live_kubeconfig), "--pod", POD, "-o", "json")
    assert (code, err) == (0, "")
    nrts = export(fake_apiserver, fake_apiserver.nrt_resource.plural, tmp_path / "nrts.yaml")
    nodes = export(fake_apiserver, "nodes", tmp_path / "nodes.yaml")
    code, files, err = fit("--pod", POD, "--node", nodes, nrts, "-o", "json")
    assert (code, err) == (0, "")
    assert json.loads(live) == json.loads(files)
    assert [d["node"] for d in json.loads(live)] == ["gpu-1", "worker-1", "worker-2", "worker-3"]


def test_a_pod_the_cluster_holds_is_named_namespace_slash_name_or_name_with_n(live_kubeconfig: Path) -> None:
    code, out, err = fit("--kubeconfig", str(live_kubeconfig), "--pod", "telco/du-2")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == (
        # worker-1 scores its zone 1, where the kubelet places the pod; the reference rules would
        # also count zone 0 (score 39), where the pod's cpu does not fit.
        "pod telco/du-2 (Guaranteed), strategy LeastAllocated: fits 2 of 4 node(s); best worker-1 (score 68)"
    )
    assert fit("--kubeconfig", str(live_kubeconfig), "--pod", "du-2", "-n", "telco")[1] == out
    code, out, err = fit("--kubeconfig", str(live_kubeconfig), "--pod", "telco/nope")
    assert (code, out) == (2, "")
    assert err.startswith("rte: error: pod telco/nope: not found at http://127.0.0.1:")


def test_kubeconfig_comes_from_the_environment_as_for_kubectl(live_kubeconfig: Path) -> None:
    code, out, err = fit("--pod", "telco/du-2", env={"KUBECONFIG": str(live_kubeconfig)})
    assert (code, err) == (0, "") and "fits 2 of 4 node(s)" in out


def test_a_bound_pod_gets_a_note_that_its_node_may_already_count_it(live_kubeconfig: Path) -> None:
    code, out, err = fit("--kubeconfig", str(live_kubeconfig), "--pod", "telco/du-1", "-o", "json")
    assert code == 0 and len(json.loads(out)) == 4
    assert err == "rte: note: pod telco/du-1 is bound to worker-1; that node's NRT may already count it\n"


def test_files_and_a_cluster_together_are_a_usage_error(live_kubeconfig: Path) -> None:
    code, _, err = fit(
        "--kubeconfig", str(live_kubeconfig), "--pod", POD, str(REPO / "examples" / "nrt-two-nodes.yaml")
    )
    assert (code, err) == (
        2,
        "rte: error: --kubeconfig: the NRTs and Nodes come from the cluster: give no files\n",
    )


def test_a_mistyped_manifest_is_a_missing_file_not_a_missing_pod(
    live_kubeconfig: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "pod.yaml"
    code, _, err = fit("--kubeconfig", str(live_kubeconfig), "--pod", str(missing))
    assert code == 2 and err.startswith(f"rte: error: {missing}: cannot read")


def test_without_files_or_any_cluster_configuration_the_error_says_what_to_give(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, err = fit("--pod", POD)
    assert (code, out) == (2, "")
    assert err == (
        "rte: error: NRT: give at least one NodeResourceTopology file (or --node file), or a cluster to read"
        " them from: Kubernetes configuration: no $KUBECONFIG or ~/.kube/config; not running in a pod"
        " (KUBERNETES_SERVICE_HOST is not set): pass --kubeconfig when running outside a cluster\n"
    )
