"""The daemons' apiserver client (rte.runtime.kubeclient): where its configuration comes from,
configuration errors, default timeouts, pacing, no hidden retries; and the agent's retry rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import urllib3
import yaml
from kubernetes import client

from rte.agent.publish.retry import ApiRetryBackoff, Failure, classify, retry_after
from rte.errors import ConfigError
from rte.runtime.kubeclient import AGENT_SOURCES, Source, load_api_client
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import wait_until

AGENT = AGENT_SOURCES
EXTENDER = (Source.IN_CLUSTER, Source.DEFAULT_KUBECONFIG)


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
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(
        ConfigError, match=r"not running in a pod .*\$KUBECONFIG is not set: pass --kubeconfig"
    ):
        load_api_client(None, sources=AGENT)


@pytest.fixture
def outside_a_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No in-cluster environment, no $KUBECONFIG and an empty home: returns the home."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _server(api_client: object) -> str:
    return str(api_client.configuration.host)  # type: ignore[attr-defined]


def test_without_a_flag_kubeconfig_then_home_are_found_like_kubectl_does(
    outside_a_cluster: Path, fake_apiserver: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        ConfigError,
        match=r"^Kubernetes configuration: no \$KUBECONFIG or ~/.kube/config; not running in a pod",
    ):
        load_api_client()
    fake_apiserver.write_kubeconfig(outside_a_cluster / ".kube" / "config")
    assert _server(load_api_client()) == fake_apiserver.url
    elsewhere = fake_apiserver.write_kubeconfig(outside_a_cluster.parent / "elsewhere")
    (outside_a_cluster / ".kube" / "config").write_text("not: [a kubeconfig")
    monkeypatch.setenv("KUBECONFIG", f"/nonexistent:{elsewhere}")
    assert _server(load_api_client()) == fake_apiserver.url


def test_each_daemon_keeps_its_own_precedence_between_a_kubeconfig_and_in_cluster(
    outside_a_cluster: Path, fake_kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent never picks up a ~/.kube/config it was not given (issue #24: nor did it take
    # $KUBECONFIG, which every other command honours).
    (outside_a_cluster / ".kube").mkdir(parents=True)
    (outside_a_cluster / ".kube" / "config").write_text(fake_kubeconfig.read_text())
    with pytest.raises(ConfigError, match=r"not running in a pod .*; \$KUBECONFIG is not set"):
        load_api_client(sources=AGENT)
    monkeypatch.setenv("KUBECONFIG", f"/nonexistent:{fake_kubeconfig}")
    assert load_api_client(sources=AGENT).configuration.host.startswith("http://")
    monkeypatch.setenv("KUBECONFIG", str(fake_kubeconfig))
    assert load_api_client(sources=EXTENDER).configuration.host.startswith("http://")
    # In a pod, the agent and the extender take the service account; kubectl's order the kubeconfig.
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    for sources in (AGENT, EXTENDER):
        with pytest.raises(ConfigError, match="in-cluster service account: cannot load"):
            load_api_client(sources=sources)  # no token file here: the service account was chosen
    assert load_api_client().configuration.host.startswith("http://")
    # An explicit kubeconfig always wins.
    assert load_api_client(str(fake_kubeconfig), sources=AGENT).configuration.host.startswith("http://")


def test_a_context_selects_the_cluster_and_an_unknown_one_is_named(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    config = fake_apiserver.kubeconfig()
    config["clusters"].append({"name": "other", "cluster": {"server": "https://other.example:6443"}})
    config["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "rte-fake"}})
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert _server(load_api_client(str(path))) == fake_apiserver.url
    assert _server(load_api_client(str(path), context="other")) == "https://other.example:6443"
    with pytest.raises(ConfigError) as err:
        load_api_client(str(path), context="nowhere")
    assert str(err.value).startswith(f"{path} (context nowhere): cannot load the apiserver configuration")
    assert "\n" not in str(err.value)


def test_requests_time_out_by_default_and_are_not_retried_behind_our_back(
    fake_apiserver: FakeApiServer, fake_kubeconfig: Path
) -> None:
    fake_apiserver.register_node("worker-1")
    api_client = load_api_client(str(fake_kubeconfig), qps=0, timeout=0.2, user_agent="rte-test/1")
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
    assert fake_apiserver.requests[-1].user_agent == "rte-test/1"
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
