"""``rte fit`` through the real CLI (CliRunner), on the shipped examples and on small files.

The worked example (examples/): pod ``numa-app`` asks for 4 CPUs and 8 GiB in one container,
Guaranteed; both nodes run single-numa-node / container scope.

* worker-a: node-0 has 3 CPUs (too few), node-1 has 4 GiB (too little): no zone fits.
* worker-b: both zones fit; the kubelet takes the lowest id, node-0.
  LeastAllocated per zone = mean over cpu, memory of (avail - req) * 100 // avail:
  node-0: cpu (8-4)*100//8 = 50, memory (16-8)*100//16 = 50 -> 50;
  node-1: cpu (16-4)*100//16 = 75, memory (64-8)*100//64 = 87 -> (75+87)//2 = 81.
  The kubelet's rules score the zone it takes, node-0: 50. The reference's take the smallest
  non-zero zone score: 50 as well.
  MostAllocated: node-0 cpu 4*100//8 = 50, memory 8*100//16 = 50 -> 50, with cpu=3
  (3*50 + 50)//4 = 50; node-1 cpu 4*100//16 = 25, memory 8*100//64 = 12 -> 18, with cpu=3
  (3*25 + 12)//4 = 21. Kubelet rules: node-0's 50 either way; reference: smallest, 18 and 21.
  LeastNUMANodes: one zone at distance 10 (the minimum): 100 - 1*(100//8) + (100//8)//2 = 94.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rte.cli import main
from tests.helpers.paths import REPO

POD = str(REPO / "examples" / "pod-guaranteed.yaml")
NRTS = str(REPO / "examples" / "nrt-two-nodes.yaml")
WORKER_A_REASON = "single-numa-node: no single NUMA zone holds cpu=4 and memory=8Gi"
REFERENCE_WORKER_A_REASON = (
    'cannot align container "app": memory=8589934592 fits in no single NUMA zone with the rest'
)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["fit", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_worked_example_prints_a_table_with_the_hand_checked_score() -> None:
    code, out, err = run("--pod", POD, NRTS)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "NODE      FITS  SCORE  REASON",
        f"worker-a  no    -      {WORKER_A_REASON}",
        "worker-b  yes   50     fits NUMA zone 0",
        "",
        "pod default/numa-app (Guaranteed), strategy LeastAllocated: fits 1 of 2 node(s);"
        " best worker-b (score 50)",
    ]


def test_json_output_has_exactly_node_fits_reason_score() -> None:
    code, out, _ = run("--pod", POD, NRTS, "-o", "json")
    assert code == 0
    assert json.loads(out) == [
        {"node": "worker-a", "fits": False, "reason": WORKER_A_REASON, "score": None},
        {"node": "worker-b", "fits": True, "reason": "fits NUMA zone 0", "score": 50},
    ]


def test_the_reference_rules_give_the_reference_reason() -> None:
    code, out, _ = run("--pod", POD, NRTS, "-o", "json", "--compat", "Reference")
    assert code == 0
    assert json.loads(out)[0]["reason"] == REFERENCE_WORKER_A_REASON


def test_unknown_rules_are_a_one_line_error() -> None:
    code, _, err = run("--pod", POD, NRTS, "--compat", "kubernetes")
    assert code == 2
    assert "--compat: 'kubernetes' is not one of kubelet, reference" in err


@pytest.mark.parametrize(
    ("options", "score"),
    [
        (["--strategy", "MostAllocated"], 50),
        (["--strategy", "MostAllocated", "--weight", "cpu=3"], 50),
        (["--strategy", "MostAllocated", "--compat", "reference"], 18),
        (["--strategy", "MostAllocated", "--weight", "cpu=3", "--compat", "reference"], 21),
        (["--strategy", "LeastNUMANodes"], 94),
        (["--strategy", "leastnumanodes"], 94),
        (["--strategy", "LeastNUMANodes", "--compat", "reference"], 94),
    ],
)
def test_strategy_and_weights_change_the_score_as_computed_by_hand(options: list[str], score: int) -> None:
    code, out, _ = run("--pod", POD, NRTS, "-o", "json", *options)
    assert code == 0
    assert json.loads(out)[1]["score"] == score


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


NIC_POD = """
kind: Pod
metadata: {name: with-nic}
spec:
  containers:
    - name: c
      resources:
        limits: {cpu: "1", memory: 1Gi, example.com/nic: "1"}
"""

NRT_JSON_LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [
        {
            "apiVersion": "topology.node.k8s.io/v1alpha2",
            "kind": "NodeResourceTopology",
            "metadata": {"name": name},
            "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
            "zones": [
                {
                    "name": "node-0",
                    "type": "Node",
                    "resources": [
                        {"name": "cpu", "capacity": "4", "allocatable": "4", "available": "4"},
                        {"name": "memory", "capacity": "4Gi", "allocatable": "4Gi", "available": "4Gi"},
                    ],
                }
            ],
        }
        for name in ("n1", "n2")
    ],
}


def test_node_objects_supply_allocatable_and_nodes_without_an_nrt_are_listed_last(tmp_path: Path) -> None:
    pod = _write(tmp_path / "pod.yaml", NIC_POD)
    nrts = _write(tmp_path / "nrts.json", json.dumps(NRT_JSON_LIST))
    nodes = _write(
        tmp_path / "nodes.yaml",
        """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 4Gi, example.com/nic: "2"}}
---
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 4Gi}}
---
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 4Gi, example.com/nic: "2"}}
""",
    )
    code, out, err = run("--pod", pod, "--node", nodes, nrts, "-o", "json")
    assert (code, err) == (0, "")
    result = {d["node"]: d for d in json.loads(out)}
    assert list(result) == ["n1", "n2", "n3"]
    # The nic is in no zone: host-level, fine where the node has it, rejected where it does not.
    assert result["n1"]["fits"] is True
    assert result["n2"] == {
        "node": "n2",
        "fits": False,
        "reason": "example.com/nic is not allocatable on the node",
        "score": None,
    }
    # Without an NRT the node passes and scores 0 (the pod is Guaranteed).
    assert result["n3"] == {
        "node": "n3",
        "fits": True,
        "reason": "node publishes no NodeResourceTopology",
        "score": 0,
    }


def test_without_node_objects_the_allocatable_check_is_skipped(tmp_path: Path) -> None:
    pod = _write(tmp_path / "pod.yaml", NIC_POD)
    nrts = _write(tmp_path / "nrts.json", json.dumps(NRT_JSON_LIST))
    code, out, _ = run("--pod", pod, nrts, "-o", "json")
    assert code == 0
    assert [d["fits"] for d in json.loads(out)] == [True, True]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "Random"], "rte: error: --strategy: 'Random' is not one of MostAllocated, Least"),
        (["--weight", "cpu=0"], "rte: error: --weight: weight of cpu must be a positive integer, got 0"),
        (["--weight", "cpu=-3"], "rte: error: --weight: weight of cpu must be a positive integer, got -3"),
        (["--weight", "cpu"], "rte: error: --weight: expected RESOURCE=WEIGHT, got 'cpu'"),
        (["--weight", "cpu=heavy"], "rte: error: --weight: weight of cpu is not an integer: 'heavy'"),
        (["-o", "yaml"], "rte: error: --output: unknown format 'yaml'"),
    ],
)
def test_bad_options_are_one_line_errors_with_exit_status_2(args: list[str], message: str) -> None:
    code, out, err = run("--pod", POD, NRTS, *args)
    assert code == 2
    assert out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_a_malformed_quantity_names_the_file_document_and_field(tmp_path: Path) -> None:
    text = (REPO / "examples" / "nrt-two-nodes.yaml").read_text(encoding="utf-8")
    bad = _write(tmp_path / "bad.yaml", text.replace('available: "16"}', 'available: "16 cores"}'))
    code, _, err = run("--pod", POD, bad)
    assert code == 2
    assert err == (
        f"rte: error: {bad}[document 1]: zones[1].resources[0].available: not a quantity: '16 cores'\n"
    )


def test_a_negative_quantity_in_a_users_nrt_file_is_one_line_naming_the_field(tmp_path: Path) -> None:
    text = (REPO / "examples" / "nrt-two-nodes.yaml").read_text(encoding="utf-8")
    bad = _write(tmp_path / "bad.yaml", text.replace('available: "16"}', 'available: "-2"}'))
    code, out, err = run("--pod", POD, bad)
    assert (code, out) == (2, "")
    assert err == (
        f"rte: error: {bad}[document 1]: zones[1].resources[0].available:"
        " negative quantity '-2': an NRT never holds one\n"
    )


def test_a_manifest_that_is_not_a_pod_is_rejected(tmp_path: Path) -> None:
    deployment = _write(tmp_path / "deploy.yaml", "kind: Deployment\nmetadata: {name: web}\n")
    code, _, err = run("--pod", deployment, NRTS)
    assert code == 2
    assert err == f"rte: error: {deployment}: kind: expected Pod, got 'Deployment'\n"


def test_a_pod_with_a_malformed_request_names_the_container_field(tmp_path: Path) -> None:
    pod = _write(
        tmp_path / "pod.yaml",
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: c\n      resources: {requests: {cpu: lots}}\n",
    )
    code, _, err = run("--pod", pod, NRTS)
    assert code == 2
    assert err.startswith(f"rte: error: {pod}: spec.containers[0].resources.requests.cpu: ")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "  containers:\n    - name: c\n      resources: {requests: {cpu: '-2'}}\n",
            "spec.containers[0].resources.requests.cpu: must not be negative, got '-2'",
        ),
        (
            "  containers:\n    - name: c\n      resources: {limits: {memory: -1Gi}}\n",
            "spec.containers[0].resources.limits.memory: must not be negative, got '-1Gi'",
        ),
        ("  containers: []\n", "spec.containers: a pod needs at least one container"),
        ("  nodeName: worker-a\n", "spec.containers: a pod needs at least one container"),
    ],
    ids=["negative request", "negative limit", "empty containers", "no containers"],
)
def test_a_pod_with_a_negative_request_or_no_container_is_one_line_and_decides_nothing(
    tmp_path: Path, spec: str, message: str
) -> None:
    pod = _write(tmp_path / "pod.yaml", f"kind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}")
    code, out, err = run("--pod", pod, NRTS)
    assert (code, out) == (2, "")
    assert err == f"rte: error: {pod}: {message}\n"


def test_missing_files_and_duplicate_nodes_are_input_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run("--pod", str(tmp_path / "nope.yaml"), NRTS)
    assert code == 2 and err.startswith(f"rte: error: {tmp_path / 'nope.yaml'}: cannot read")
    code, _, err = run("--pod", POD, NRTS, NRTS)
    assert code == 2
    assert err == f"rte: error: {NRTS}: NodeResourceTopology 'worker-a' is also given in {NRTS}\n"
    # Without files, fit reads a cluster; here there is none to find (tests/cli/test_fit_cluster.py).
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run("--pod", POD)
    assert code == 2 and "give at least one NodeResourceTopology file" in err


@pytest.mark.parametrize("which", ["pod", "nrt"])
def test_a_yaml_syntax_error_is_one_line_naming_the_file_and_line(tmp_path: Path, which: str) -> None:
    broken = _write(tmp_path / "broken.yaml", "kind: Pod\nmetadata: {name: [p\n")
    code, _, err = run("--pod", broken, NRTS) if which == "pod" else run("--pod", POD, broken)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith(f"rte: error: {broken}: invalid YAML at line 3, column 1: ")


def test_an_error_inside_a_list_names_the_document_and_the_item(tmp_path: Path) -> None:
    listed = _write(
        tmp_path / "list.yaml",
        "kind: NodeResourceTopology\nmetadata: {name: first}\n---\n"
        "kind: NodeResourceTopologyList\nitems:\n  - kind: NodeResourceTopology\n    metadata: {name: a}\n"
        "  - just text\n",
    )
    code, _, err = run("--pod", POD, listed)
    assert code == 2
    assert err == f"rte: error: {listed}[document 1]: items[1]: expected an NRT object, got str\n"
