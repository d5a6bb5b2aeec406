"""A real Prometheus scrapes a real agent and a real extender, and evaluates rte's alert rules.

The agent publishes against the fake kubelet and the apiserver double (the e2e fixtures), the
extender serves NRT files, and Debian's ``prometheus`` binary scrapes both every second with the
rules of deploy/prometheus-rules.yaml loaded. The test asks Prometheus's HTTP API, as Grafana
and Alertmanager would. Without the binary it skips (CI installs it and fails instead).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.e2e import NODE, AgentFactory
from tests.helpers.paths import DEPLOY, REPO
from tests.helpers.waiting import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=5) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as e:
            body = json.loads(e.read())
        assert body["status"] == "success", f"{path} {params}: {body}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def value(self, expr: str) -> float | None:
        """The single value ``expr`` gives now, or None while it gives nothing."""
        result = self.query(expr)
        if not result:
            return None
        assert len(result) == 1, result
        return float(result[0]["value"][1])


@pytest.fixture
def extender_url(tmp_path: Path) -> Iterator[str]:
    log = tmp_path / "extender.log"
    argv = [sys.executable, "-m", "rte", "extender", "--listen", "127.0.0.1:0"]
    argv += ["--nrt-file", str(REPO / "examples" / "nrt-two-nodes.yaml")]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        found = wait_for(
            lambda: re.search(r"serving on (http://\S+)", log.read_text(errors="replace")), 15, "the extender"
        )
        yield found.group(1)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0, log.read_text()


@pytest.fixture
def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        message = "the prometheus binary is not installed (Debian package prometheus)"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it")
        pytest.skip(message)
    return found


def start_prometheus(
    binary: str, directory: Path, agent_port: int, extender_url: str
) -> subprocess.Popen[bytes]:
    (rule,) = [d for d in yaml.safe_load_all((DEPLOY / "prometheus-rules.yaml").read_text()) if d]
    (directory / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": ["rules.yaml"],
        # The job names and the node label the PodMonitor and ServiceMonitor in deploy/ give.
        "scrape_configs": [
            {
                "job_name": "node-agent",
                "static_configs": [{"targets": [f"127.0.0.1:{agent_port}"], "labels": {"node": NODE}}],
            },
            {
                "job_name": "scheduler-extender",
                "static_configs": [{"targets": [urllib.parse.urlsplit(extender_url).netloc]}],
            },
        ],
    }
    (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
    return subprocess.Popen(
        [
            binary,
            f"--config.file={directory / 'prometheus.yml'}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address=127.0.0.1:{free_port()}",
            "--log.level=warn",
        ],
        stdout=(directory / "prometheus.log").open("wb"),
        stderr=subprocess.STDOUT,
    )


def listen_address(proc: subprocess.Popen[bytes]) -> str:
    flag = next(a for a in proc.args if isinstance(a, str) and a.startswith("--web.listen-address="))  # type: ignore[union-attr]
    return "http://" + flag.split("=", 1)[1]


def dashboard_expressions() -> list[str]:
    board = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    # Grafana's variables, as Grafana would fill them in.
    return [
        e.replace("$__rate_interval", "1m").replace("$node", ".*").replace("$resource", ".*") for e in exprs
    ]


def test_a_real_prometheus_scrapes_both_daemons_and_evaluates_every_rule_and_panel(
    start_agent: AgentFactory,
    api: FakeApiServer,
    kubelet: FakeKubelet,
    extender_url: str,
    prometheus_binary: str,
    tmp_path: Path,
) -> None:
    agent = start_agent()
    wait_for(lambda: agent.get("/readyz")[0] == 200, 15, "the agent to be ready")
    proc = start_prometheus(prometheus_binary, tmp_path, agent.port, extender_url)
    try:
        prom = Prometheus(listen_address(proc))

        def answers() -> bool:
            try:
                prom.api("query", query="1")
            except (OSError, ValueError):  # not listening yet, or 503 while it starts
                assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
                return False
            return True

        wait_for(answers, 30, "Prometheus to answer")
        wait_for(lambda: prom.value('rte_agent_ready{job="node-agent"}') == 1, 30, "the agent's series")
        wait_for(
            lambda: prom.value('rte_extender_ready{job="scheduler-extender"}') == 1, 30, "the extender's"
        )
        assert prom.value('rte_agent_nrt_writes_total{outcome="created"}') == 1
        assert (
            prom.value(f'rte_agent_zone_available{{node="{NODE}",zone="node-0",resource="cpu"}}') or 0
        ) > 0
        assert prom.value("rte_extender_nrt_nodes") == 2
        for job in ("node-agent", "scheduler-extender"):
            assert prom.value(f'up{{job="{job}"}}') == 1
            assert (prom.value(f'process_resident_memory_bytes{{job="{job}"}}') or 0) > 10 * 2**20
        assert (prom.value("time() - rte_agent_last_successful_publish_timestamp_seconds") or 1e9) < 60

        # Every panel's query is valid PromQL for a real Prometheus, and once rates have a few
        # samples, the agent's panels show data (all but failures and findings, which a healthy
        # agent does not have).
        wait_for(lambda: (prom.value('count_over_time(up{job="node-agent"}[1m])') or 0) >= 4, 20, "4 scrapes")
        for expr in dashboard_expressions():
            result = prom.query(expr)
            quiet = ("cycle_errors", "podresources_errors", "findings")
            if "node-agent" in expr and not any(name in expr for name in quiet):
                assert result, f"no data for {expr}"

        # The rules loaded and evaluate cleanly; with a healthy agent and extender none fires.
        def evaluated() -> list[dict[str, Any]]:
            rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
            return rules if all(r.get("lastEvaluation", "").startswith("2") for r in rules) else []

        rules = wait_for(evaluated, 15, "a rule evaluation")
        assert len(rules) == 8
        assert all(r["health"] == "ok" for r in rules), rules
        assert [r["name"] for r in rules if r["state"] == "firing"] == []
    finally:
        proc.terminate()
        proc.wait(15)
