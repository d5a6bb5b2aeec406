"""The agent's apiserver client: configuration errors, default timeouts, pacing, no hidden retries."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import urllib3
from kubernetes import client

from rte.agent.kube import USER_AGENT, load_api_client
from rte.agent.retry import ApiRetryBackoff, Failure, classify, retry_after
from rte.errors import ConfigError
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import wait_until


def test_a_missing_kubeconfig_is_a_one_line_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: no such kubeconfig file"):
        load_api_client(str(tmp_path / "nope.yaml"))


def test_a_kubeconfig_that_is_not_yaml_or_not_a_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("clusters: [unclosed")
    with pytest.raises(ConfigError, match="not a usable kubeconfig"):
        load_api_client(str(broken))
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(ConfigError, match="current-context"):
        load_api_client(str(empty))


def test_outside_a_cluster_without_a_kubeconfig_the_error_says_what_to_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match=r"in-cluster service account: .*pass --kubeconfig"):
        load_api_client(None)


def test_requests_time_out_by_default_and_are_not_retried_behind_our_back(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    fake_apiserver.register_node("worker-1")
    api_client = load_api_client(str(fake_kubeconfig), qps=0, timeout=0.2)
    core = client.CoreV1Api(api_client)
    fake_apiserver.faults.set_latency(0.4, verb="get", resource="nodes")
    with pytest.raises(urllib3.exceptions.HTTPError) as err:
        core.read_node("worker-1")
    assert classify(err.value) is Failure.TRANSIENT
    fake_apiserver.faults.set_latency(0)
    # The server logs a request once it has answered it, after the injected delay.
    wait_until(lambda: fake_apiserver.count("get", "nodes") >= 1, what="the delayed GET")
    time.sleep(0.2)
    assert fake_apiserver.count("get", "nodes") == 1, "urllib3 must not re-send the request itself"
    assert core.read_node("worker-1").metadata.name == "worker-1"
    assert fake_apiserver.requests[-1].user_agent == USER_AGENT
    api_client.close()


def test_paced_requests_reach_the_server_at_the_configured_rate(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    fake_apiserver.register_node("worker-1")
    api_client = load_api_client(str(fake_kubeconfig), qps=20)
    core = client.CoreV1Api(api_client)
    started = time.monotonic()
    for _ in range(50):
        core.read_node("worker-1", _preload_content=False)
    elapsed = time.monotonic() - started
    assert elapsed >= (50 - 40) / 20 * 0.9, "a burst of 40, then 20 per second"
    api_client.close()


def test_backoff_doubles_up_to_its_cap_with_equal_jitter() -> None:
    backoff = ApiRetryBackoff(0.5, 4.0, rng=lambda: 1.0)
    assert [backoff.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert ApiRetryBackoff(0.5, 4.0, rng=lambda: 0.0).delay(2) == 1.0


def test_retry_after_is_read_from_the_header_and_capped() -> None:
    class Throttled(Exception):
        status = 429

        def __init__(self, seconds: str) -> None:
            super().__init__("throttled")
            self.headers = {"Retry-After": seconds}

    assert retry_after(Throttled("7")) == 7.0
    assert retry_after(Throttled("3600")) == 60.0
    assert ApiRetryBackoff(0.2, 10.0, rng=lambda: 0.5).delay_for(Throttled("3600"), 0) == 60.0
