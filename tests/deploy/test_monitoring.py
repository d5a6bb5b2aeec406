"""deploy/monitoring.yaml, the alert rules and the Grafana dashboard against what rte really exposes.

A real ``rte run`` process (``--no-publish`` on fixtures) and an in-process ``rte extender`` are
scraped over HTTP; every metric name the rules and the dashboard use must be in what they serve.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rte.extender.app import ExtenderApp
from rte.extender.settings import extender_settings
from tests.helpers.paths import REPO
from tests.helpers.scripts import load_script

# All on one worker under pytest -n (--dist loadgroup): the module-scoped agent and extender
# processes start once, not once on each worker.
pytestmark = pytest.mark.xdist_group("deploy-monitoring-daemons")

DEPLOY = REPO / "deploy"
FIXTURES = REPO / "tests" / "fixtures"
KUBELET_CONFIG = FIXTURES / "kubelet" / "config" / "dell-r640-sriov-static-kubelet-config.SYNTHETIC.yaml"
METRIC = re.compile(r"\b(?:rte|process|python)_[a-z0-9_]+\b")


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None]


def one(name: str, kind: str, object_name: str | None = None) -> dict[str, Any]:
    (found,) = [
        d for d in documents(name) if d["kind"] == kind and object_name in (None, d["metadata"]["name"])
    ]
    return found


def rule_expressions() -> list[str]:
    (rule,) = documents("prometheus-rules.yaml")
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    return loaded


def dashboard_expressions() -> list[str]:
    board = dashboard()
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    return exprs


def names_in(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in METRIC.findall(expr)}


def exposed_names(exposition: str) -> set[str]:
    """Sample names, plus families declared without samples yet (labelled, never used so far)."""
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        body: bytes = response.read()
    return body.decode()


@pytest.fixture(scope="module")
def agent_exposition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("agent")
    log = tmp / "agent.log"
    argv = [
        sys.executable,
        "-m",
        "rte",
        "run",
        "--no-publish",
        "--http-address=127.0.0.1:0",
        "--notify-file=",
        f"--kubelet-root={tmp}",
        f"--sysfs={FIXTURES / 'sysfs' / 'dell-r640-2s-xeon6230r-2numa-sriov-vfs' / 'sys'}",
        f"--podresources={FIXTURES / 'podres' / 'dell-r640-sriov-static'}",
        f"--kubelet-config={KUBELET_CONFIG}",
        "--node-name=worker-1",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out)
    try:
        deadline = time.monotonic() + 20
        port = None
        while port is None:
            found = re.search(r'http="(\d+)"', log.read_text(errors="replace"))
            port = int(found.group(1)) if found else None
            if port is None:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        # After the first cycle the zone gauges are filled too.
        text = scrape(f"http://127.0.0.1:{port}/metrics")
        while "rte_agent_zone_available{" not in text and time.monotonic() < deadline:
            time.sleep(0.05)
            text = scrape(f"http://127.0.0.1:{port}/metrics")
        yield text
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def extender_exposition() -> Iterator[str]:
    settings = extender_settings(
        listen="127.0.0.1:0", nrt_files=[str(REPO / "examples" / "nrt-two-nodes.yaml")]
    )
    with ExtenderApp(settings) as app:
        assert app.server is not None
        yield scrape(app.server.url + "/metrics")


def test_every_metric_the_rules_and_the_dashboard_use_is_exposed(
    agent_exposition: str, extender_exposition: str
) -> None:
    used = names_in(rule_expressions() + dashboard_expressions())
    assert len(used) >= 20, sorted(used)  # the extraction found the queries' metrics
    exposed = exposed_names(agent_exposition) | exposed_names(extender_exposition)
    assert sorted(used - exposed) == []


def test_the_series_the_alerts_watch_exist_before_anything_happens(
    agent_exposition: str, extender_exposition: str
) -> None:
    """An alert on increase() or on a threshold needs its series at 0, not absent, from the start."""
    samples = agent_exposition + extender_exposition
    for sample in (
        'rte_agent_nrt_writes_total{outcome="failed"}',
        'rte_agent_topology_affinity_errors_total{reason="TopologyAffinityError"}',
        "rte_agent_ready ",
        "rte_agent_last_successful_publish_timestamp_seconds ",
        'rte_extender_request_duration_seconds_bucket{le="4.0",verb="filter"}',
        "rte_extender_resync_mismatched_nodes ",
        "rte_extender_ready ",
    ):
        assert f"\n{sample}" in samples, sample


def test_the_check_catches_a_metric_nobody_exposes(agent_exposition: str) -> None:
    used = names_in(["rate(rte_agent_nrt_write_total[5m])"])
    assert used - exposed_names(agent_exposition) == {"rte_agent_nrt_write_total"}


def test_the_pod_monitor_scrapes_the_agents_named_port_as_job_node_agent() -> None:
    monitor = one("monitoring.yaml", "PodMonitor")["spec"]
    daemonset = one("daemonset.yaml", "DaemonSet")
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert monitor["selector"]["matchLabels"].items() <= pod_labels.items()
    (agent,) = [c for c in daemonset["spec"]["template"]["spec"]["containers"] if c["name"] == "agent"]
    ports = {p["name"] for p in agent["ports"]}
    (endpoint,) = monitor["podMetricsEndpoints"]
    assert endpoint["port"] in ports and endpoint["path"] == "/metrics"
    assert pod_labels[monitor["jobLabel"]] == "node-agent"
    assert {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in endpoint[
        "relabelings"
    ]


def test_the_service_monitor_scrapes_the_extenders_service_as_job_scheduler_extender() -> None:
    monitor = one("monitoring.yaml", "ServiceMonitor")["spec"]
    service = one("scheduler-extender.yaml", "Service", "rte-extender-metrics")
    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert service["metadata"]["labels"][monitor["jobLabel"]] == "scheduler-extender"


def test_the_rules_name_the_jobs_the_monitors_create() -> None:
    jobs = set(re.findall(r'job="([^"]+)"', " ".join(rule_expressions() + dashboard_expressions())))
    assert jobs == {"node-agent", "scheduler-extender"}


def test_the_dashboard_panels_are_laid_out_without_overlap_and_use_the_datasource_variable() -> None:
    board = dashboard()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in board["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"panel {p['title']!r} overlaps another"
        cells |= mine
        for target in p.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


@pytest.mark.parametrize(
    ("manifest", "good", "bad"),
    [
        ("monitoring.yaml", "podMetricsEndpoints", "podMetricEndpoints"),
        ("monitoring.yaml", "interval: 30s", "interval: 30 seconds"),
        ("prometheus-rules.yaml", "annotations:", "anotations:"),
        ("prometheus-rules.yaml", "for: 10m", "for: ten minutes"),
    ],
)
def test_the_schema_check_catches_mistakes_in_the_operator_kinds(
    tmp_path: Path, manifest: str, good: str, bad: str
) -> None:
    check = load_script("check_manifests")
    OLDEST, problems = check.OLDEST, check.problems

    assert problems(DEPLOY / manifest, [OLDEST]) == []
    broken = tmp_path / manifest
    broken.write_text((DEPLOY / manifest).read_text().replace(good, bad, 1))
    found = problems(broken, [OLDEST])
    assert found and all(line.startswith(f"{manifest}: ") for line in found), found
