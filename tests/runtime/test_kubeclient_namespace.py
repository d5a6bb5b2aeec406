"""The namespace kubectl would use without ``-n`` (rte.runtime.kubeclient.default_namespace)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rte.errors import ConfigError
from rte.runtime import kubeclient
from rte.runtime.kubeclient import Source, default_namespace


def kubeconfig(path: Path) -> Path:
    context = {"cluster": "c", "user": "u"}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "plain", "context": context},
                    {"name": "telco", "context": {**context, "namespace": "telco"}},
                ],
                "current-context": "telco",
            }
        )
    )
    return path


def test_the_context_namespace_else_default(tmp_path: Path) -> None:
    path = str(kubeconfig(tmp_path / "config"))
    assert default_namespace(path) == "telco"  # the current context's
    assert default_namespace(path, context="plain") == "default"
    with pytest.raises(ConfigError, match=r"\(context nope\): no such context"):
        default_namespace(path, context="nope")


def test_kubeconfig_is_found_as_kubectl_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "env-config")))
    assert default_namespace() == "telco"


def test_in_a_pod_the_service_account_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "namespace").write_text("rte\n")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setattr(kubeclient, "SERVICE_ACCOUNT_NAMESPACE", str(tmp_path / "namespace"))
    assert default_namespace(sources=(Source.IN_CLUSTER,)) == "rte"
    monkeypatch.setattr(kubeclient, "SERVICE_ACCOUNT_NAMESPACE", str(tmp_path / "absent"))
    assert default_namespace(sources=(Source.IN_CLUSTER,)) == "default"
