"""``rte dump`` and ``rte fit`` on the Grace-Blackwell-class fixture (issue #23): 18 NUMA zones,
two with CPUs, four CPU-less HBM zones and twelve empty ones (see the fixture's NOTICE)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from rte.cli import main
from tests.helpers.paths import FIXTURES

GRACE = FIXTURES / "sysfs" / "grace-blackwell-2s-18numa-144c-synthetic"
GIB = 2**30


def _dump(tmp_path: Path, policy: str) -> Path:
    config = tmp_path / "kubelet.yaml"
    config.write_text(
        "cpuManagerPolicy: static\n"
        f"topologyManagerPolicy: {policy}\n"
        "topologyManagerPolicyOptions: {max-allowable-numa-nodes: '18'}\n"
    )
    result = CliRunner().invoke(
        main,
        [
            "dump",
            "--sysfs",
            str(GRACE / "sys"),
            "--kubelet-config",
            str(config),
            "--no-kubelet",
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    path = tmp_path / f"nrt-{policy}.json"
    path.write_text(result.stdout)
    return path


def _pod(tmp_path: Path, name: str, requests: dict[str, str], guaranteed: bool = True) -> Path:
    resources = {"requests": requests, **({"limits": requests} if guaranteed else {})}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "x", "resources": resources}]},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


def _fit(pod: Path, nrt: Path) -> dict[str, object]:
    result = CliRunner().invoke(main, ["fit", "--pod", str(pod), str(nrt), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    return row  # type: ignore[no-any-return]


def test_dump_publishes_every_zone_cpu_less_ones_included() -> None:
    """Hardware capacity (no kubelet config): each zone's own CPUs and memory, and its distances."""
    result = CliRunner().invoke(main, ["dump", "--sysfs", str(GRACE / "sys"), "--no-kubelet", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    nrt = json.loads(result.stdout)
    zones = {z["name"]: {r["name"]: r["capacity"] for r in z["resources"]} for z in nrt["zones"]}
    assert len(zones) == 18
    assert [n for n, z in zones.items() if z["cpu"] != "0"] == ["node-0", "node-1"]
    hbm = [n for n, z in zones.items() if z["cpu"] == "0" and z["memory"] != "0"]
    assert hbm == ["node-2", "node-6", "node-10", "node-14"]
    assert zones["node-2"]["memory"] == str(186 * GIB)
    costs = {c["name"]: c["value"] for c in nrt["zones"][0]["costs"]}
    assert (costs["node-0"], costs["node-1"], costs["node-2"], costs["node-10"]) == (10, 40, 80, 120)


def test_fit_on_eighteen_zones_admits_what_the_kubelet_admits(tmp_path: Path) -> None:
    """Before #23 every pod but a single-zone one was refused "more than rte enumerates (16)"."""
    for policy in ("single-numa-node", "restricted", "best-effort"):
        nrt = _dump(tmp_path, policy)
        best_effort = _fit(_pod(tmp_path, "be", {}, guaranteed=False), nrt)
        assert best_effort["fits"], best_effort
        burstable = _fit(_pod(tmp_path, "burst", {"cpu": "100", "memory": "1Gi"}, guaranteed=False), nrt)
        assert burstable["fits"], burstable
        pinned = _fit(_pod(tmp_path, "pinned", {"cpu": "8", "memory": "8Gi"}), nrt)
        assert pinned["fits"], pinned
    wide = _fit(_pod(tmp_path, "wide", {"cpu": "100", "memory": "8Gi"}), _dump(tmp_path, "restricted"))
    assert wide["fits"], wide  # memory is not aligned (memory manager None): cpu alone, both Graces
    refused = _fit(
        _pod(tmp_path, "wide", {"cpu": "100", "memory": "8Gi"}), _dump(tmp_path, "single-numa-node")
    )
    assert not refused["fits"] and "no single NUMA zone holds cpu=100" in str(refused["reason"])
