"""The agent's DaemonSet: what of the host each container can see and write, and the state copy loop."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from rte.agent.watch.files import FileWatcher, WatchSpec
from rte.host.sysfs import read_machine
from tests.helpers.paths import REPO

# All on one worker under pytest -n (--dist loadgroup): the module-scoped `go build` of the copier
# runs once, not once on each worker.
pytestmark = pytest.mark.xdist_group("deploy-copier")

FIXTURES = REPO / "tests" / "fixtures" / "sysfs"

SYSFS_SUBMOUNTS = (
    "/sys/fs/cgroup",
    "/sys/fs/bpf",
    "/sys/fs/pstore",
    "/sys/kernel/tracing",
    "/sys/kernel/debug",
    "/sys/kernel/security",
    "/sys/kernel/config",
    "/sys/firmware/efi/efivars",
)
"""Where Linux distributions mount filesystems below /sys; a plain read-only bind of a parent
leaves each of them writable."""

KUBELET_API_SOCKET_DIRS = (
    "/var/lib/kubelet/device-plugins",  # kubelet.sock: device plugin registration
    "/var/lib/kubelet/plugins_registry",  # plugin registration (CSI, DRA)
    "/var/lib/kubelet/plugins",  # CSI and DRA driver sockets
)
POD_VOLUMES = "/var/lib/kubelet/pods"  # every pod's volumes, secrets included


def pod_spec() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "daemonset.yaml").read_text()) if d]
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    spec: dict[str, Any] = daemonset["spec"]["template"]["spec"]
    return spec


def containers() -> list[dict[str, Any]]:
    spec = pod_spec()
    return [*spec.get("initContainers", []), *spec["containers"]]


def container(name: str) -> dict[str, Any]:
    (found,) = [c for c in containers() if c["name"] == name]
    return found


def volumes() -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in pod_spec()["volumes"]}


def host_mounts(c: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(host path, container path, mount) of each hostPath mount of ``c``."""
    vols = volumes()
    return [
        (vols[m["name"]]["hostPath"]["path"], m["mountPath"], m)
        for m in c.get("volumeMounts", [])
        if "hostPath" in vols[m["name"]]
    ]


def under(path: str, parent: str) -> bool:
    return (
        PurePosixPath(path) == PurePosixPath(parent) or PurePosixPath(parent) in PurePosixPath(path).parents
    )


def visible(c: dict[str, Any], host_path: str) -> bool:
    """Whether ``host_path`` shows through one of ``c``'s hostPath mounts, not hidden by a deeper mount."""
    mount_paths = [m["mountPath"] for m in c.get("volumeMounts", [])]
    for source, target, _ in host_mounts(c):
        if under(host_path, source):
            inside = str(PurePosixPath(target) / PurePosixPath(host_path).relative_to(source))
            hidden = any(under(inside, p) and PurePosixPath(p) != PurePosixPath(target) for p in mount_paths)
            if not hidden:
                return True
    return False


# -- /sys (#14.11) --------------------------------------------------------------------------------


def test_no_sysfs_mount_leaves_a_filesystem_below_it_writable() -> None:
    for c in containers():
        for source, _, mount in host_mounts(c):
            if not under(source, "/sys"):
                continue
            assert mount.get("readOnly") is True, c["name"]
            if mount.get("recursiveReadOnly") == "Enabled":
                continue
            covered = [s for s in SYSFS_SUBMOUNTS if under(s, source)]
            assert covered == [], f"{c['name']} mounts {source}, writable below it: {covered}"


@pytest.mark.parametrize("machine", sorted(p.name for p in FIXTURES.iterdir() if (p / "sys").is_dir()))
def test_the_agent_reads_the_same_machine_through_only_the_sysfs_parts_it_mounts(
    machine: str, tmp_path: Path
) -> None:
    agent = container("agent")
    root = {e["name"]: e.get("value") for e in agent["env"]}["RTE_SYSFS_ROOT"]
    full = FIXTURES / machine / "sys"
    partial = tmp_path / "sys"
    for source, target, _ in host_mounts(agent):
        if under(source, "/sys"):
            assert under(target, root)
            inside = PurePosixPath(source).relative_to("/sys")
            shutil.copytree(full / inside, partial / PurePosixPath(target).relative_to(root), symlinks=True)
    assert read_machine(partial, pci=False) == read_machine(full, pci=False)


# -- /var/lib/kubelet (#14.12) --------------------------------------------------------------------


@pytest.mark.parametrize("sockets", KUBELET_API_SOCKET_DIRS)
def test_no_container_can_reach_a_kubelet_registration_socket(sockets: str) -> None:
    for c in containers():
        assert not visible(c, f"{sockets}/kubelet.sock"), f"{c['name']} sees {sockets}"


def test_only_the_copy_loop_sees_the_kubelet_root_and_it_does_not_see_pod_volumes() -> None:
    for c in containers():
        sees_root = visible(c, "/var/lib/kubelet/cpu_manager_state")
        assert sees_root == (c["name"] == "kubelet-state"), c["name"]
        assert not visible(c, f"{POD_VOLUMES}/some-uid/volumes/kubernetes.io~secret/token"), c["name"]
    # The agent reads the copies, and the kubelet's socket directory and config: nothing else.
    assert sorted(source for source, _, _ in host_mounts(container("agent"))) == [
        "/sys/devices/system/cpu",
        "/sys/devices/system/node",
        "/var/lib/kubelet/config.yaml",
        "/var/lib/kubelet/pod-resources",
    ]


def test_only_the_agent_holds_an_api_token() -> None:
    spec = pod_spec()
    assert spec["automountServiceAccountToken"] is False
    token_volumes = {
        name
        for name, v in volumes().items()
        if any("serviceAccountToken" in s for s in v.get("projected", {}).get("sources", []))
    }
    for c in containers():
        mounted = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
        holds = {mounted[n] for n in token_volumes if n in mounted}
        if c["name"] == "agent":
            assert holds == {"/var/run/secrets/kubernetes.io/serviceaccount"}
        else:
            assert holds == set(), c["name"]


def test_the_agent_finds_the_copies_where_the_copy_loop_writes_them() -> None:
    agent_env = {e["name"]: e.get("value") for e in container("agent")["env"]}
    loop_env = {e["name"]: e.get("value") for e in container("kubelet-state")["env"]}
    assert agent_env["RTE_KUBELET_ROOT"] == loop_env["STATE_DIR"]
    shared = {
        m["name"]
        for m in container("agent")["volumeMounts"]
        if m["mountPath"] == agent_env["RTE_KUBELET_ROOT"]
    }
    assert shared == {
        m["name"]
        for m in container("kubelet-state")["volumeMounts"]
        if m["mountPath"] == loop_env["STATE_DIR"]
    }
    assert next(m for m in container("agent")["volumeMounts"] if m["name"] in shared)["readOnly"] is True
    (source,) = [t for s, t, _ in host_mounts(container("kubelet-state")) if s == "/var/lib/kubelet"]
    assert loop_env["KUBELET_DIR"] == source


def kubelet_write(path: Path, data: str) -> None:
    """As the kubelet's file store writes a checkpoint: a temporary file, then a rename over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".")
    with os.fdopen(fd, "w") as f:
        f.write(data)
    os.replace(tmp, path)


COPIER_SOURCE = REPO / "deploy" / "kubelet-state-copier"


@pytest.fixture(scope="module")
def copier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kubelet-state container's program, built from deploy/kubelet-state-copier with go."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed here (.ci/run installs it)")
    binary = tmp_path_factory.mktemp("copier") / "kubelet-state-copier"
    env = {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
    subprocess.run(
        [go, "build", "-trimpath", "-o", str(binary), "."],
        cwd=COPIER_SOURCE,
        env=env,
        check=True,
        timeout=300,
    )
    return binary


@pytest.fixture
def copy_loop(copier: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The kubelet-state container's program, run against two temporary directories."""
    loop = container("kubelet-state")
    assert loop["command"] == ["/kubelet-state-copier"] and "args" not in loop
    kubelet, state = tmp_path / "kubelet", tmp_path / "state"
    kubelet.mkdir()
    state.mkdir()
    env = {"KUBELET_DIR": str(kubelet), "STATE_DIR": str(state)}
    proc = subprocess.Popen([str(copier)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        yield kubelet, state
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0, proc.stderr.read() if proc.stderr else ""


def copied(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def wait_until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_copy_loop_follows_the_kubelets_renames_and_the_agents_watch_sees_each_new_version(
    copy_loop: tuple[Path, Path],
) -> None:
    kubelet, state = copy_loop
    fired: list[str] = []
    seen = threading.Event()

    def on_event(reason: str) -> None:
        fired.append(reason)
        seen.set()

    names = frozenset({"cpu_manager_state", "memory_manager_state", "dra_manager_state"})
    watcher = FileWatcher([WatchSpec(state, names, "kubelet-state")], on_event)
    watcher.start()
    try:
        for version in (
            '{"policyName":"static","defaultCpuSet":"0-3"}',
            '{"policyName":"static","defaultCpuSet":"2-3"}',
        ):
            seen.clear()
            kubelet_write(kubelet / "cpu_manager_state", version)
            wait_until(lambda v=version: copied(state / "cpu_manager_state") == v)
            assert seen.wait(5)
        inode = (state / "cpu_manager_state").stat().st_ino
        time.sleep(2.5)  # two more rounds of the loop with nothing new: no rewrite
        assert (state / "cpu_manager_state").stat().st_ino == inode
        kubelet_write(kubelet / "memory_manager_state", '{"policyName":"Static"}')
        wait_until(lambda: (state / "memory_manager_state").is_file())
        (kubelet / "memory_manager_state").unlink()
        wait_until(lambda: not (state / "memory_manager_state").exists())
        assert sorted(p.name for p in state.iterdir()) == ["cpu_manager_state"]  # no temporaries left
    finally:
        watcher.stop()
    assert set(fired) == {"kubelet-state"}


def test_the_agent_reads_both_checkpoints_the_copy_loop_provides(copy_loop: tuple[Path, Path]) -> None:
    from rte.agent.scanner import CheckpointFiles
    from rte.host.kubelet_state import CPU_MANAGER_STATE, MEMORY_MANAGER_STATE
    from tests.helpers.paths import KUBELET_FIXTURES

    kubelet, state = copy_loop
    fixtures = KUBELET_FIXTURES / "state"
    kubelet_write(
        kubelet / CPU_MANAGER_STATE,
        (fixtures / "cpu_manager_state.SYNTHETIC.dell-r640-scenario.json").read_text(),
    )
    kubelet_write(
        kubelet / MEMORY_MANAGER_STATE,
        (fixtures / "memory_manager_state.SYNTHETIC.dell-r640-scenario.json").read_text(),
    )
    wait_until(lambda: (state / CPU_MANAGER_STATE).is_file() and (state / MEMORY_MANAGER_STATE).is_file())
    # The agent's kubelet root in the DaemonSet is the copy loop's STATE_DIR (checked above).
    read = CheckpointFiles(state).read()
    assert read.cpu is not None and read.cpu.policy == "static"
    assert read.cpu.exclusive_cpus == frozenset({2, 4, 54, 56, 3, 5, 7, 9, 55, 57, 59, 61})
    assert read.memory is not None and sorted(read.memory.machine_state) == [0, 1]


# -- what `kubectl exec` into the kubelet-state container yields (#26.2) --------------------------

KUBELET_SECRETS = (
    "pki/kubelet-client-current.pem",  # the kubelet's client certificate and key (kubeadm)
    "kubeconfig",  # installer kubeconfigs at the top of the root dir
    "bootstrap-kubeconfig",
    "checkpoints/some-pod-container.tar",  # ContainerCheckpoint archives: process memory
)


def test_the_container_that_mounts_the_kubelet_root_has_only_the_copier_to_run() -> None:
    """No shell, no tools, no interpreter: its image is FROM scratch with one static program,
    which is its command and takes no arguments (pods/exec can run only what the image holds)."""
    loop = container("kubelet-state")
    assert loop["image"] == container("agent")["image"] + "-kubelet-state"
    assert loop["command"] == ["/kubelet-state-copier"] and "args" not in loop
    instructions = [
        line.split()
        for line in (COPIER_SOURCE / "Containerfile").read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(" ")
    ]
    assert [i for i in instructions if i[0] in {"FROM", "COPY", "ADD", "RUN"}] == [
        ["FROM", "scratch"],
        ["COPY", "kubelet-state-copier", "/kubelet-state-copier"],
    ]
    # Every other container that runs the Python image mounts none of the kubelet root.
    for c in containers():
        if c["name"] != "kubelet-state":
            assert not visible(c, "/var/lib/kubelet/pki/kubelet-client-current.pem"), c["name"]


def test_what_the_kubelet_state_container_can_read_is_the_three_checkpoints(
    copier: Path, tmp_path: Path
) -> None:
    """The list the issue asks for: of a kubelet root holding credentials next to the
    checkpoints, the copier copies the checkpoints and nothing else, and refuses arguments
    (which is all `kubectl exec` could add)."""
    kubelet, state = tmp_path / "kubelet", tmp_path / "state"
    state.mkdir()
    for name in (*KUBELET_SECRETS, "cpu_manager_state", "memory_manager_state", "dra_manager_state"):
        (kubelet / name).parent.mkdir(parents=True, exist_ok=True)
        (kubelet / name).write_text(f"content of {name}")
    refused = subprocess.run([str(copier), str(kubelet / "pki")], capture_output=True, text=True, timeout=10)
    assert refused.returncode == 2 and "takes no arguments" in refused.stderr
    proc = subprocess.Popen([str(copier)], env={"KUBELET_DIR": str(kubelet), "STATE_DIR": str(state)})
    try:
        wait_until(lambda: len(list(state.iterdir())) == 3)
        time.sleep(1.5)  # one more round
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
    assert sorted(p.name for p in state.iterdir()) == [
        "cpu_manager_state",
        "dra_manager_state",
        "memory_manager_state",
    ]
    # The kubelet's registration sockets and pod volumes are hidden from it as well.
    loop = container("kubelet-state")
    assert not visible(loop, f"{POD_VOLUMES}/uid/volumes/kubernetes.io~secret/token/token")
    assert visible(loop, "/var/lib/kubelet/cpu_manager_state")
