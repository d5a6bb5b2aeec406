"""deploy/scheduler-extender.yaml: its flags are valid, its RBAC exact, its scheduler config wired to us."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import yaml

from rte.cli import extender_cmd
from rte.commands.options import setting_flags
from rte.consumer.cache.config import CacheMode, ForeignPodsDetect
from rte.extender.settings import EXTENDER_SCHEMA, extender_settings
from tests.helpers.paths import DEPLOY

MANIFEST = DEPLOY / "scheduler-extender.yaml"
SERVICE_ACCOUNT = {"kind": "ServiceAccount", "name": "rte-extender", "namespace": "rte"}


def objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d is not None]


def one(kind: str) -> dict[str, Any]:
    [found] = [o for o in objects() if o["kind"] == kind]
    return found


def container() -> dict[str, Any]:
    [c] = one("Deployment")["spec"]["template"]["spec"]["containers"]
    return c


def scheduler_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(one("ConfigMap")["data"]["scheduler-config.yaml"])
    return config


def test_the_container_flags_are_accepted_by_rte_extender() -> None:
    c = container()
    assert c["command"] == ["rte", "extender"]
    params = extender_cmd.make_context("extender", list(c["args"])).params
    settings = extender_settings(**setting_flags(EXTENDER_SCHEMA, params))
    assert settings.cache.mode is CacheMode.OVER_RESERVE
    assert settings.cache.resync_period == 5
    assert settings.cache.config.foreign_pods_detect is ForeignPodsDetect.ONLY_EXCLUSIVE_RESOURCES
    assert settings.cache.config.profiles == frozenset({"topo-aware-scheduler"})
    assert settings.port == 8888


def test_the_scheduler_config_calls_our_verbs_on_the_service() -> None:
    config = scheduler_config()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    [profile] = config["profiles"]
    [extender] = config["extenders"]
    assert set(extender) <= {
        "urlPrefix",
        "filterVerb",
        "preemptVerb",
        "prioritizeVerb",
        "weight",
        "bindVerb",
        "enableHTTPS",
        "tlsConfig",
        "httpTimeout",
        "nodeCacheCapable",
        "managedResources",
        "ignorable",
    }
    assert (extender["filterVerb"], extender["prioritizeVerb"]) == ("filter", "prioritize")
    assert "bindVerb" not in extender
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    assert extender["weight"] >= 1
    url = urlsplit(extender["urlPrefix"])
    service = one("Service")
    assert (
        url.hostname == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local"
    )
    assert url.port == service["spec"]["ports"][0]["port"]
    assert (
        service["spec"]["selector"].items()
        <= one("Deployment")["spec"]["template"]["metadata"]["labels"].items()
    )
    # The profile the scheduler serves is the one the extender counts as its own.
    assert f"--scheduler-profile={profile['schedulerName']}" in container()["args"]


def test_rbac_grants_reads_only_and_leases_only_in_the_agents_namespace() -> None:
    rules = one("ClusterRole")["rules"]
    assert rules == [
        {
            "apiGroups": ["topology.node.k8s.io"],
            "resources": ["noderesourcetopologies"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
    ]
    role = one("Role")
    assert role["metadata"]["namespace"] == "rte"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch"]}
    ]
    for binding in (one("ClusterRoleBinding"), one("RoleBinding")):
        assert binding["subjects"] == [SERVICE_ACCOUNT]
    assert one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "rte-extender"


def test_the_pod_is_hardened() -> None:
    spec = one("Deployment")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert not (spec["hostNetwork"] or spec["hostPID"] or spec["hostIPC"])
    security = container()["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "volumeMounts" not in container()
    assert container()["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container()["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert one("Deployment")["spec"]["replicas"] == 1  # the reserve cache is per process
