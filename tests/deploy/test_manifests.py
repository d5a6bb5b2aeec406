"""deploy/: schema validity, the security we promise, exact RBAC, and the admission policy's CEL."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.paths import DEPLOY
from tests.helpers.scripts import load_script

_check_manifests = load_script("check_manifests")
OLDEST, problems = _check_manifests.OLDEST, _check_manifests.problems

AGENT = "system:serviceaccount:rte:rte-agent"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
WORKER_1_UID = "6a0f3a2e-1b7c-4d5e-9f10-111111111111"


@cache
def objects(name: str) -> tuple[dict[str, Any], ...]:
    return tuple(d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d is not None)


def one(name: str, kind: str, object_name: str | None = None) -> dict[str, Any]:
    found = [
        o
        for o in objects(name)
        if o["kind"] == kind and (object_name is None or o["metadata"]["name"] == object_name)
    ]
    assert len(found) == 1, f"expected one {kind} {object_name or ''} in {name}, found {len(found)}"
    return found[0]


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = one("daemonset.yaml", "DaemonSet")["spec"]["template"]["spec"]
    return spec


def containers() -> list[dict[str, Any]]:
    spec = pod_spec()
    return [*spec.get("initContainers", []), *spec["containers"]]


def container(name: str) -> dict[str, Any]:
    (found,) = [c for c in containers() if c["name"] == name]
    return found


# -- schemas --------------------------------------------------------------------------------------


@pytest.mark.parametrize("manifest", [str(p.relative_to(DEPLOY)) for p in _check_manifests.manifests()])
def test_every_manifest_validates_strictly_against_the_kubernetes_schemas(manifest: str) -> None:
    assert problems(DEPLOY / manifest, [OLDEST, "1.37.0"]) == []


def test_the_schema_check_catches_a_misspelt_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (DEPLOY / "daemonset.yaml").read_text().replace("readOnlyRootFilesystem", "readOnlyRootFileSystem")
    )
    assert any("readOnlyRootFileSystem" in line for line in problems(bad, [OLDEST]))


# -- the pod's security ---------------------------------------------------------------------------


def test_every_container_drops_all_capabilities_and_cannot_escalate() -> None:
    for c in containers():
        sc = c["securityContext"]
        assert sc["capabilities"] == {"drop": ["ALL"]}, c["name"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert sc.get("privileged", False) is False
        profile = sc.get("seccompProfile") or pod_spec()["securityContext"]["seccompProfile"]
        assert profile == {"type": "RuntimeDefault"}


def test_no_host_namespaces_and_no_service_link_variables() -> None:
    spec = pod_spec()
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
    assert spec["enableServiceLinks"] is False


def test_every_host_path_is_mounted_read_only_and_only_kubelet_state_sees_the_kubelet_root() -> None:
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod_spec()["volumes"] if "hostPath" in v}
    assert sorted(host_paths.values()) == [
        "/sys/devices/system/cpu",
        "/sys/devices/system/node",
        "/var/lib/kubelet",
        "/var/lib/kubelet/config.yaml",
        "/var/lib/kubelet/pod-resources",
    ]
    for c in containers():
        for mount in c.get("volumeMounts", []):
            if mount["name"] in host_paths:
                assert mount.get("readOnly") is True, mount["name"]
    for c in containers():
        mounted = {host_paths[m["name"]] for m in c["volumeMounts"] if m["name"] in host_paths}
        assert ("/var/lib/kubelet" in mounted) == (c["name"] == "kubelet-state"), c["name"]
    # The pod-resources socket is reached through its directory, never a file mount.
    kinds = {
        v["hostPath"]["path"]: v["hostPath"].get("type") for v in pod_spec()["volumes"] if "hostPath" in v
    }
    assert kinds["/var/lib/kubelet/pod-resources"] == "Directory"


def test_root_is_used_only_with_every_capability_dropped() -> None:
    for c in containers():
        sc = c["securityContext"]
        if sc.get("runAsUser") == 0:
            assert sc["capabilities"]["drop"] == ["ALL"] and sc["allowPrivilegeEscalation"] is False


def test_the_node_name_comes_from_the_downward_api_and_paths_point_into_the_mounts() -> None:
    agent = container("agent")
    env = {e["name"]: e for e in agent["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    mounts = [m["mountPath"] for m in agent["volumeMounts"]]
    socket = env["RTE_PODRESOURCES"]["value"].removeprefix("unix://")
    sysfs = env["RTE_SYSFS_ROOT"]["value"]
    for path in (
        f"{sysfs}/devices/system/node",
        f"{sysfs}/devices/system/cpu",
        socket,
        env["RTE_KUBELET_CONFIG"]["value"],
        env["RTE_KUBELET_ROOT"]["value"],
    ):
        assert any(path == m or path.startswith(m + "/") for m in mounts), path


def test_the_daemonsets_environment_is_accepted_by_the_agents_own_settings_loader() -> None:
    from rte.agent.settings import AGENT_SCHEMA, load_settings

    agent = container("agent")
    env = {e["name"]: e["value"] for e in agent["env"] if "value" in e}
    env["NODE_NAME"] = "worker-1"  # the downward API's part
    known = {f"RTE_{info.name.upper()}" for info in AGENT_SCHEMA.fields}
    # Unknown RTE_* variables are ignored on purpose (Kubernetes injects *_PORT ones): catch typos here.
    assert {name for name in env if name.startswith("RTE_")} <= known
    settings = load_settings(env=env, flags={})
    assert settings.node_name == "worker-1"
    assert str(settings.sysfs_root) == env["RTE_SYSFS_ROOT"]
    assert settings.podresources == env["RTE_PODRESOURCES"]
    assert str(settings.kubelet_config) == env["RTE_KUBELET_CONFIG"]


def test_probes_resources_priority_and_tolerations() -> None:
    spec = pod_spec()
    agent = container("agent")
    port = {p["name"]: p["containerPort"] for p in agent["ports"]}
    assert agent["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert agent["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    http_address = {e["name"]: e.get("value") for e in agent["env"]}["RTE_HTTP_ADDRESS"]
    assert http_address.endswith(f":{port['http']}")
    assert set(agent["resources"]["requests"]) == {"cpu", "memory"}
    assert set(agent["resources"]["limits"]) == {"memory"}
    assert {"operator": "Exists"} in spec["tolerations"]
    priority = one("daemonset.yaml", "PriorityClass", spec["priorityClassName"])
    assert priority["value"] <= 1_000_000_000, "user-defined classes cannot go higher"


# -- RBAC -----------------------------------------------------------------------------------------


def rules(kind: str) -> set[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    out = set()
    for rule in one("daemonset.yaml", kind)["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.add((group, resource, tuple(sorted(rule["verbs"])), tuple(rule.get("resourceNames", ()))))
    return out


def test_the_cluster_role_grants_exactly_what_the_agent_uses() -> None:
    assert rules("ClusterRole") == {
        ("topology.node.k8s.io", "noderesourcetopologies", ("create", "get", "list", "patch", "watch"), ()),
        ("", "nodes", ("get",), ()),
        ("", "pods", ("list", "watch"), ()),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            ("get",),
            ("noderesourcetopologies.topology.node.k8s.io",),
        ),
    }


def test_the_agent_gets_no_right_on_leases_unless_its_heartbeat_lease_is_turned_on() -> None:
    """The default freshness signal is the agent pod's readiness: the base grants nothing on
    Leases. deploy/components/agent-lease, which turns the Lease on, grants it in namespace rte
    only (a Role), and just what renewing needs."""
    assert all(obj["kind"] not in ("Role", "RoleBinding") for obj in objects("daemonset.yaml"))
    assert all("leases" not in rule["resources"] for rule in one("daemonset.yaml", "ClusterRole")["rules"])
    rbac = DEPLOY / "components" / "agent-lease" / "agent-lease-rbac.yaml"
    component = tuple(d for d in yaml.safe_load_all(rbac.read_text()) if d is not None)
    (role,) = [d for d in component if d["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "rte"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]


def test_the_binding_names_the_agents_service_account() -> None:
    account = one("daemonset.yaml", "ServiceAccount")["metadata"]
    assert pod_spec()["serviceAccountName"] == account["name"] == "rte-agent"
    binding = one("daemonset.yaml", "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "rte-agent", "namespace": "rte"}]
    assert binding["roleRef"]["name"] == one("daemonset.yaml", "ClusterRole")["metadata"]["name"]


# -- the CRD and the image ------------------------------------------------------------------------


def test_the_crd_is_the_approved_cluster_scoped_two_version_api() -> None:
    crd = one("crd-noderesourcetopologies.yaml", "CustomResourceDefinition")
    assert crd["metadata"]["name"] == "noderesourcetopologies.topology.node.k8s.io"
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"] == (
        "https://github.com/kubernetes/enhancements/pull/1870"
    )
    assert crd["spec"]["scope"] == "Cluster"
    versions = {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}
    assert versions == {"v1alpha1": (True, False), "v1alpha2": (True, True)}


def test_the_image_runs_rte_run_as_a_non_root_user_by_default() -> None:
    lines = [line.strip() for line in (DEPLOY / "Containerfile").read_text().splitlines()]
    assert 'ENTRYPOINT ["rte", "run"]' in lines
    user = [line for line in lines if line.startswith("USER ")]
    assert user and not user[-1].removeprefix("USER ").startswith("0")


def test_the_image_ships_bytecode_since_its_containers_cannot_write_any() -> None:
    # PYTHONDONTWRITEBYTECODE and a read-only root: without .pyc files made at build time every
    # start compiles every module it imports again (docs/performance.md, `rte dump`).
    # Only what rte imports is compiled (hack/compile_imported.py, tested in test_bytecode.py).
    text = (DEPLOY / "Containerfile").read_text()
    assert "PYTHONDONTWRITEBYTECODE=1" in text
    assert "COPY compile_imported.py /wheels/" in text
    assert "/opt/rte/bin/python -B /wheels/compile_imported.py" in text


def test_the_image_base_is_overridable_and_pinned_by_digest_by_default() -> None:
    lines = [line.strip() for line in (DEPLOY / "Containerfile").read_text().splitlines()]
    froms = [line for line in lines if line.startswith("FROM ")]
    assert froms == ["FROM ${BASE_IMAGE} AS build", "FROM ${BASE_IMAGE}"]
    (default,) = [
        line.removeprefix("ARG BASE_IMAGE=") for line in lines if line.startswith("ARG BASE_IMAGE=")
    ]
    name, _, digest = default.partition("@sha256:")
    assert name.startswith("docker.io/library/python:3.11-slim")
    assert len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)


# -- the admission policy -------------------------------------------------------------------------


def cel(expression: str, activation: dict[str, Any]) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def admit(
    operation: str,
    resource: str,
    name: str,
    *,
    username: str = AGENT,
    node: str | None = "worker-1",
    node_uid: str | None = WORKER_1_UID,
    namespace: str = "",
    owners: list[dict[str, str]] | None = None,
    manifest: str = "admission-policy.yaml",
) -> bool | None:
    """The policy's verdict: True (allowed), False (denied) or None (the policy does not apply)."""
    import celpy

    policy_name = "rte-agent-own-node-only" if manifest == "admission-policy.yaml" else None
    policy = one(manifest, "ValidatingAdmissionPolicy", policy_name)
    binding = one(manifest, "ValidatingAdmissionPolicyBinding", policy_name)
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    if not any(resource in r["resources"] and operation in r["operations"] for r in rules):
        return None
    extra = {NODE_NAME_KEY: [node]} if node is not None else {}
    if node_uid is not None:
        extra[NODE_UID_KEY] = [node_uid]
    obj: dict[str, Any] = {"metadata": {"name": name, **({"ownerReferences": owners} if owners else {})}}
    request = {
        "operation": operation,
        "name": name,
        "namespace": namespace,
        "resource": {"resource": resource},
        "userInfo": {"username": username, "extra": extra},
    }
    activation: dict[str, Any] = {
        "request": celpy.json_to_cel(request),
        "object": None if operation == "DELETE" else celpy.json_to_cel(obj),
        "oldObject": celpy.json_to_cel(obj) if operation != "CREATE" else None,
    }
    if not all(bool(cel(m["expression"], activation)) for m in policy["spec"]["matchConditions"]):
        return None
    variables: dict[Any, Any] = {}
    for var in policy["spec"]["variables"]:
        activation["variables"] = celpy.celtypes.MapType(variables)
        variables[celpy.celtypes.StringType(var["name"])] = cel(var["expression"], activation)
    activation["variables"] = celpy.celtypes.MapType(variables)
    verdicts = [cel(v["expression"], activation) for v in policy["spec"]["validations"]]
    # An evaluation error counts as a denial (failurePolicy: Fail).
    return all(isinstance(v, celpy.celtypes.BoolType) and bool(v) for v in verdicts)


def test_the_agent_may_write_the_nrt_and_lease_of_its_own_node() -> None:
    assert admit("CREATE", "noderesourcetopologies", "worker-1") is True
    assert admit(
        "UPDATE",
        "noderesourcetopologies",
        "worker-1",
        owners=[{"kind": "Node", "name": "worker-1", "uid": WORKER_1_UID}],
    )
    assert admit("CREATE", "leases", "worker-1", namespace="rte") is True
    assert admit("UPDATE", "leases", "worker-1", namespace="rte") is True


def test_the_agent_may_not_write_another_nodes_objects() -> None:
    assert admit("UPDATE", "noderesourcetopologies", "worker-2") is False
    assert admit("UPDATE", "leases", "worker-2", namespace="rte") is False
    assert admit("DELETE", "noderesourcetopologies", "worker-2") is False


def test_the_agent_may_not_hand_its_nrt_to_another_node_or_write_leases_elsewhere() -> None:
    other_owner = [{"kind": "Node", "name": "worker-2", "uid": WORKER_1_UID}]
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", owners=other_owner) is False
    rack = [
        {"kind": "Rack", "name": "r1", "uid": "r"},
        {"kind": "Node", "name": "worker-1", "uid": WORKER_1_UID},
    ]
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", owners=rack) is True
    assert admit("UPDATE", "leases", "worker-1", namespace="kube-node-lease") is False


def test_the_owner_node_must_be_the_agents_node_by_uid_too() -> None:
    """A Node deleted and recreated under the same name is another Node: its uid differs."""
    stale = [{"kind": "Node", "name": "worker-1", "uid": "0d1e2f3a-0000-4000-8000-222222222222"}]
    assert admit("CREATE", "noderesourcetopologies", "worker-1", owners=stale) is False
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", owners=stale) is False
    live = [{"kind": "Node", "name": "worker-1", "uid": WORKER_1_UID}]
    assert admit("CREATE", "noderesourcetopologies", "worker-1", owners=live) is True
    # A token that names the node but not its uid may write the NRT, but not claim an owner.
    assert admit("CREATE", "noderesourcetopologies", "worker-1", node_uid=None, owners=live) is False
    assert admit("CREATE", "noderesourcetopologies", "worker-1", node_uid=None) is True


def test_a_token_without_a_node_name_is_refused() -> None:
    assert admit("CREATE", "noderesourcetopologies", "worker-1", node=None) is False
    assert admit("CREATE", "noderesourcetopologies", "", node="") is False


def test_other_users_are_not_judged_by_the_policy() -> None:
    assert admit("UPDATE", "noderesourcetopologies", "worker-2", username="system:admin", node=None) is None


# -- policy edges (#26.9) -------------------------------------------------------------------------


def test_the_agent_policy_applies_in_whichever_namespace_the_agent_is_installed() -> None:
    """Installed in namespace `numa` (kustomize's namespace: leaves CEL alone), the agent is still
    held to its own node, and its Leases to its own namespace."""
    moved = "system:serviceaccount:numa:rte-agent"
    assert admit("UPDATE", "noderesourcetopologies", "worker-2", username=moved) is False
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", username=moved) is True
    assert admit("UPDATE", "leases", "worker-1", username=moved, namespace="numa") is True
    assert admit("UPDATE", "leases", "worker-1", username=moved, namespace="rte") is False
    assert admit("UPDATE", "leases", "worker-2", username=moved, namespace="numa") is False


@pytest.mark.parametrize("kind", ["node", "NODE", "nOdE"])
def test_an_owner_kind_spelled_in_another_case_is_still_checked(kind: str) -> None:
    stale = [{"kind": kind, "name": "worker-2", "uid": "0d1e2f3a-0000-4000-8000-222222222222"}]
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", owners=stale) is False
    live = [{"kind": kind, "name": "worker-1", "uid": WORKER_1_UID}]
    assert admit("UPDATE", "noderesourcetopologies", "worker-1", owners=live) is True


EXTENDER = "system:serviceaccount:rte-scheduler:rte-extender"


def extender_admit(operation: str, resource: str, name: str, namespace: str = "rte-scheduler") -> bool | None:
    return admit(
        operation,
        resource,
        name,
        username=EXTENDER,
        node=None,
        node_uid=None,
        namespace=namespace,
        manifest="base/extender/extender-admission-policy.yaml",
    )


def test_the_extender_may_write_its_own_lease_and_endpointslice() -> None:
    for operation in ("CREATE", "UPDATE"):
        assert extender_admit(operation, "leases", "rte-extender") is True
        assert extender_admit(operation, "endpointslices", "rte-extender-leader") is True


def test_the_extender_may_not_create_the_schedulers_lease_or_other_objects() -> None:
    """RBAC grants it create on every Lease and EndpointSlice in its namespace; the policy
    keeps it off the NUMA-aware scheduler's leader Lease and any other name or namespace."""
    assert extender_admit("CREATE", "leases", "topo-aware-scheduler") is False
    assert extender_admit("CREATE", "endpointslices", "rte-extender-abcde") is False
    assert extender_admit("CREATE", "leases", "rte-extender", namespace="kube-system") is False
    assert extender_admit("DELETE", "leases", "topo-aware-scheduler") is False
    other = admit(
        "CREATE",
        "leases",
        "topo-aware-scheduler",
        username="system:serviceaccount:rte-scheduler:topo-aware-scheduler",
        node=None,
        node_uid=None,
        namespace="rte-scheduler",
        manifest="base/extender/extender-admission-policy.yaml",
    )
    assert other is None


def test_the_extenders_role_names_what_the_policy_allows() -> None:
    role = one("scheduler-extender.yaml", "Role", "rte-extender-leader")
    named = {name for rule in role["rules"] for name in rule.get("resourceNames", [])}
    assert named == {"rte-extender", "rte-extender-leader"}


def admit_pod(
    username: str, *, subresource: str = "", owners: list[dict[str, Any]] | None = None
) -> bool | None:
    """Verdict of rte-agent-namespace-pods on a pod CREATE (or an ephemeral container UPDATE) in
    a namespace labelled as deploy/base/agent labels namespace rte."""
    import celpy

    policy = one("admission-policy.yaml", "ValidatingAdmissionPolicy", "rte-agent-namespace-pods")
    namespace = one("daemonset.yaml", "Namespace")
    selector = policy["spec"]["matchConstraints"]["namespaceSelector"]["matchLabels"]
    if not selector.items() <= namespace["metadata"]["labels"].items():
        return None
    obj: dict[str, Any] = {"metadata": {"name": "p", **({"ownerReferences": owners} if owners else {})}}
    request = {
        "operation": "UPDATE" if subresource else "CREATE",
        "subResource": subresource,
        "namespace": namespace["metadata"]["name"],
        "userInfo": {"username": username},
    }
    activation: dict[str, Any] = {"request": celpy.json_to_cel(request), "object": celpy.json_to_cel(obj)}
    verdicts = [cel(v["expression"], activation) for v in policy["spec"]["validations"]]
    return all(isinstance(v, celpy.celtypes.BoolType) and bool(v) for v in verdicts)


DS_CONTROLLER = "system:serviceaccount:kube-system:daemon-set-controller"
OWNED = [{"kind": "DaemonSet", "name": "rte-agent", "uid": "u", "controller": True}]


def test_only_the_agents_daemonset_creates_pods_in_the_privileged_namespace() -> None:
    """Namespace rte must be `privileged` for the agent's host mounts; the policy keeps everyone
    else from using that to run a privileged pod there."""
    assert admit_pod(DS_CONTROLLER, owners=OWNED) is True
    assert admit_pod("system:kube-controller-manager", owners=OWNED) is True
    assert admit_pod("alice", owners=OWNED) is False
    assert admit_pod(DS_CONTROLLER) is False
    other = [{"kind": "DaemonSet", "name": "miner", "uid": "u", "controller": True}]
    assert admit_pod(DS_CONTROLLER, owners=other) is False


def test_no_debug_container_joins_the_agents_pod() -> None:
    assert admit_pod(DS_CONTROLLER, subresource="ephemeralcontainers") is False
    assert admit_pod("alice", subresource="ephemeralcontainers") is False
