"""deploy/scheduler-extender.yaml: flags valid, RBAC exact, TLS by default, its own restricted
namespace, a NetworkPolicy, and two replicas that survive rollouts and drains."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from rte.cli import extender_cmd
from rte.commands.options import setting_flags
from rte.consumer.config import CacheMode, ForeignPodsDetect
from rte.extender import watch
from rte.extender.endpoint import PORT_NAME, slice_name
from rte.extender.settings import EXTENDER_SCHEMA, extender_settings
from tests.helpers.paths import DEPLOY

MANIFEST = DEPLOY / "scheduler-extender.yaml"
CERTIFICATES = DEPLOY / "scheduler-extender-certificates.yaml"
SCHEDULER = DEPLOY / "base" / "scheduler" / "scheduler.yaml"
NAMESPACE = "rte-scheduler"
SERVICE_ACCOUNT = {"kind": "ServiceAccount", "name": "rte-extender", "namespace": NAMESPACE}
POD_IP = "10.1.2.3"


def objects(path: Any = MANIFEST) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def one(kind: str, name: str | None = None, path: Any = MANIFEST) -> dict[str, Any]:
    [found] = [o for o in objects(path) if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return found


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = one("Deployment")["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    [c] = pod_spec()["containers"]
    return c


def args() -> list[str]:
    """The container's arguments with $(POD_IP) expanded, as the kubelet does."""
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container()["env"]
    return [a.replace("$(POD_IP)", POD_IP) for a in container()["args"]]


def scheduler_config() -> dict[str, Any]:
    config_map = one("ConfigMap", path=SCHEDULER)
    config: dict[str, Any] = yaml.safe_load(config_map["data"]["scheduler-config.yaml"])
    return config


def settings() -> Any:
    params = extender_cmd.make_context("extender", args()).params
    warned: list[str] = []
    flags = setting_flags(EXTENDER_SCHEMA, params, warned.append)
    assert warned == []  # no former flag name in the shipped manifest
    return extender_settings(**flags)


def test_the_container_flags_are_accepted_by_rte_extender() -> None:
    assert container()["command"] == ["rte", "extender"]
    s = settings()
    assert s.cache.mode is CacheMode.OVER_RESERVE
    assert s.cache.resync_period == 5
    assert s.cache.config.foreign_pods_detect is ForeignPodsDetect.ONLY_EXCLUSIVE_RESOURCES
    assert s.cache.config.profiles == frozenset({"topo-aware-scheduler"})
    assert s.cache.config.startup_grace > 0  # the takeover rule needs it
    assert s.port == 8443 and s.probe_address == (POD_IP, 8080)
    assert s.election is not None and s.election.namespace == NAMESPACE
    assert (s.leader_service, s.advertise_address) == ("rte-extender", POD_IP)


def test_tls_with_a_client_ca_is_the_default_and_the_files_come_from_the_certificate_secret() -> None:
    s = settings()
    assert s.tls is not None
    [mount] = container()["volumeMounts"]
    assert mount["readOnly"] is True
    for path in (s.tls.cert, s.tls.key, s.tls.client_ca):
        assert str(path).startswith(mount["mountPath"] + "/")
    [volume] = pod_spec()["volumes"]
    assert volume["name"] == mount["name"]
    certificate = one("Certificate", "rte-extender-tls", CERTIFICATES)["spec"]
    assert volume["secret"]["secretName"] == certificate["secretName"]
    assert {s.tls.cert.name, s.tls.key.name, s.tls.client_ca.name} == {"tls.crt", "tls.key", "ca.crt"}
    assert "server auth" in certificate["usages"]
    client = one("Certificate", "topo-aware-scheduler-client", CERTIFICATES)["spec"]
    assert client["usages"][0] == "client auth" and client["issuerRef"] == certificate["issuerRef"]


def test_the_scheduler_config_calls_our_verbs_over_https_with_its_client_certificate() -> None:
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
    verbs = (extender["filterVerb"], extender["prioritizeVerb"], extender["preemptVerb"])
    assert verbs == ("filter", "prioritize", "preempt")
    assert "bindVerb" not in extender
    assert extender["nodeCacheCapable"] is True and extender["ignorable"] is False
    # kube-scheduler verifies the server only with a CA (without one, enableHTTPS means insecure).
    assert extender["enableHTTPS"] is True
    assert set(extender["tlsConfig"]) == {"certFile", "keyFile", "caFile"}
    url = urlsplit(extender["urlPrefix"])
    service = one("Service", "rte-extender")
    assert url.scheme == "https"
    assert url.hostname == f"rte-extender.{NAMESPACE}.svc"
    assert url.hostname in one("Certificate", "rte-extender-tls", CERTIFICATES)["spec"]["dnsNames"]
    assert url.port == service["spec"]["ports"][0]["port"] == settings().port
    assert f"--scheduler-profile={profile['schedulerName']}" in args()


def test_the_service_has_no_selector_and_the_leaders_endpointslice_matches_its_port() -> None:
    service = one("Service", "rte-extender")
    assert "selector" not in service["spec"]
    [port] = service["spec"]["ports"]
    assert port["name"] == PORT_NAME
    assert slice_name("rte-extender") in {
        r for rule in one("Role", "rte-extender-leader")["rules"] for r in rule.get("resourceNames", [])
    }


def test_rbac_reads_cluster_wide_and_writes_only_its_lease_and_endpointslice() -> None:
    assert one("ClusterRole")["rules"] == [
        {
            "apiGroups": ["topology.node.k8s.io"],
            "resources": ["noderesourcetopologies"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["get", "list", "watch"]},
    ]
    # The agents' Leases are read only with deploy/components/extender-lease (test_kustomize.py).
    assert all(obj["metadata"]["name"] != "rte-extender-heartbeats" for obj in objects())
    leader = one("Role", "rte-extender-leader")
    assert leader["metadata"]["namespace"] == NAMESPACE
    for rule in leader["rules"]:
        assert rule["verbs"] == ["create"] or (
            rule["resourceNames"] and set(rule["verbs"]) <= {"get", "update", "list", "watch"}
        )
    lease = settings().election
    assert [lease.name] in [r.get("resourceNames") for r in leader["rules"] if r["resources"] == ["leases"]]
    for binding in (one("ClusterRoleBinding"), *(o for o in objects() if o["kind"] == "RoleBinding")):
        assert binding["subjects"] == [SERVICE_ACCOUNT]
    assert pod_spec()["serviceAccountName"] == "rte-extender"


def test_the_cluster_role_grants_every_cluster_wide_watch_the_extender_makes() -> None:
    """The paths rte.extender.watch lists and watches across namespaces: a missing grant leaves
    that reflector failing with 403 (for the PDBs: no violation counted for pods the preempt verb
    adds)."""
    nrts = f"/apis/{watch.NRT_GROUP}/{watch.NRT_VERSION}/{watch.NRT_PLURAL}"
    rules = one("ClusterRole")["rules"]
    for path in (nrts, watch._ALL_PODS, watch._ALL_PDBS):
        parts = path.strip("/").split("/")
        group = "" if parts[0] == "api" else parts[1]
        assert any(
            group in r["apiGroups"] and parts[-1] in r["resources"] and {"list", "watch"} <= set(r["verbs"])
            for r in rules
        ), path


def test_everything_lives_in_its_own_namespace_enforcing_the_restricted_level() -> None:
    namespace = one("Namespace")
    assert namespace["metadata"]["name"] == NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for obj in [*objects(), *objects(CERTIFICATES)]:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass"):
            assert obj["metadata"]["namespace"] == NAMESPACE, obj["metadata"]["name"]


_RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim"}
_RESTRICTED_VOLUMES |= {"projected", "secret"}


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """What the Pod Security Standards' ``restricted`` profile (kubernetes.io, "Pod Security
    Standards") refuses in a pod spec: its baseline and restricted controls."""
    found: list[str] = []
    pod_sc = spec.get("securityContext", {})
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            found.append(key)
    for volume in spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']}: {sorted(kinds)}")
    if pod_sc.get("runAsUser") == 0:
        found.append("pod runAsUser 0")
    if pod_sc.get("sysctls"):
        found.append("sysctls")
    for c in spec.get("initContainers", []) + spec["containers"]:
        sc = c.get("securityContext", {})
        name = c["name"]
        if sc.get("privileged"):
            found.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{name}: allowPrivilegeEscalation must be false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            found.append(f"{name}: capabilities must drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append(f"{name}: adds capabilities")
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            found.append(f"{name}: runAsNonRoot must be true")
        if sc.get("runAsUser") == 0:
            found.append(f"{name}: runAsUser 0")
        seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{name}: seccompProfile must be RuntimeDefault or Localhost")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            found.append(f"{name}: hostPort")
        if sc.get("procMount", "Default") != "Default" or sc.get("windowsOptions", {}).get("hostProcess"):
            found.append(f"{name}: procMount or hostProcess")
        if sc.get("appArmorProfile", {}).get("type") == "Unconfined":
            found.append(f"{name}: AppArmor unconfined")
    return found


def test_the_pod_passes_the_restricted_pod_security_profile() -> None:
    assert restricted_violations(pod_spec()) == []
    assert container()["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("securityContext", "runAsNonRoot"), False, "runAsNonRoot"),
        (("containers", 0, "securityContext", "allowPrivilegeEscalation"), True, "allowPrivilegeEscalation"),
        (("containers", 0, "securityContext", "capabilities"), {"drop": ["NET_RAW"]}, "drop ALL"),
        (("containers", 0, "securityContext", "seccompProfile"), {"type": "Unconfined"}, "seccompProfile"),
        (("volumes", 0), {"name": "sys", "hostPath": {"path": "/sys"}}, "hostPath"),
    ],
)
def test_the_restricted_check_catches_each_violation(
    path: tuple[Any, ...], value: Any, expected: str
) -> None:
    spec = copy.deepcopy(pod_spec())
    target: Any = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    if path[0] == "securityContext":  # the containers set nothing of their own for this one
        spec["containers"][0]["securityContext"].pop("runAsNonRoot", None)
    assert any(expected in v for v in restricted_violations(spec))


def test_probes_and_metrics_use_the_plain_port_and_the_network_policy_admits_only_the_scheduler() -> None:
    ports = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert ports == {"https": 8443, "metrics": 8080}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container()[probe]["httpGet"] == {"path": path, "port": "metrics"}
    policy = one("NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == one("Deployment")["spec"]["selector"]["matchLabels"]
    assert policy["policyTypes"] == ["Ingress"]
    verbs, metrics = policy["ingress"]
    assert verbs["ports"] == [{"port": ports["https"], "protocol": "TCP"}]
    assert verbs["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "topo-aware-scheduler"}}}
    ]
    assert metrics["ports"] == [{"port": ports["metrics"], "protocol": "TCP"}]
    assert metrics["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }


def test_two_replicas_spread_keep_a_standby_through_rollouts_and_drains() -> None:
    deployment = one("Deployment")["spec"]
    assert deployment["replicas"] == 2
    assert deployment["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    [term] = pod_spec()["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"] == deployment["selector"]
    budget = one("PodDisruptionBudget")["spec"]
    assert budget["minAvailable"] == 1 and budget["selector"] == deployment["selector"]
    # SIGTERM waits for the fencing gap before giving the Lease up: the grace period covers it.
    election = settings().election
    assert pod_spec()["terminationGracePeriodSeconds"] > election.fencing_gap + 5
