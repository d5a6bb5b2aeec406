"""The kubelet's ``List`` checked for contradictions before it is accounted.

Each contradiction is a :class:`~rte.agent.compute.ledger.Finding` that makes the computation
inconsistent (:data:`~rte.agent.compute.ledger.INCONSISTENT_KINDS`), and each is charged the worst case:

* **the same pod listed twice**: identical entries are one pod listed twice and are charged once;
  entries that differ may be two pods with one name (one being removed, one admitted), so both
  are charged (CPUs and devices by identity, hence once each; memory blocks both);
* **a CPU or a device assigned to two pods** (or to two containers of one pod): it is one CPU or
  device, charged once, and reported;
* **an empty pod, container or resource name**: the entry is still charged where it can be
  placed, and reported.

Pod-level ``cpu_ids`` (KEP-5526) include the CPUs of the pod's containers, so a CPU in both is
not assigned twice; a device listed once per NUMA node it is attached to is one device.
"""

from __future__ import annotations

from collections.abc import Sequence

from rte.agent.compute.ledger import Finding
from rte.model.cpuset import format_cpuset
from rte.podres.types import PodResources


def _name(pod: PodResources) -> str:
    return f"pod {pod.namespace}/{pod.name}"


def _empty_names(pod: PodResources) -> list[Finding]:
    found = []
    if not pod.namespace or not pod.name:
        found.append(Finding("empty_name", f"a pod without a {'namespace' if not pod.namespace else 'name'}"))
    for index, container in enumerate(pod.containers):
        if not container.name:
            found.append(Finding("empty_name", f"{_name(pod)}: container [{index}] has no name"))
        for dev in container.devices:
            if not dev.resource_name:
                found.append(Finding("empty_name", f"{_name(pod)}: a device without a resource name"))
        for block in container.memory:
            if not block.memory_type:
                found.append(Finding("empty_name", f"{_name(pod)}: a memory block without a type"))
    return found


def _any_assigned_twice(pods: Sequence[PodResources]) -> bool:
    """Whether :func:`_assigned_twice` finds anything, answered with set operations alone: a
    clean List (the usual one) then builds no owner texts (issue #27: the simulator's agents
    check a List per cycle, 3.6 % of a reserve run was this check's texts and sorts)."""
    cpu_taken: set[int] = set()
    device_taken: set[tuple[str, str]] = set()
    for pod in pods:
        in_pod: set[int] = set()
        for container in pod.containers:
            if not in_pod.isdisjoint(container.cpu_ids):
                return True
            in_pod.update(container.cpu_ids)
            mine = {(d.resource_name, i) for d in container.devices for i in d.device_ids}
            if not device_taken.isdisjoint(mine):
                return True
            device_taken |= mine
        pod_cpus = pod.cpu_ids | in_pod  # as below: other pods' CPUs only
        if not cpu_taken.isdisjoint(pod_cpus):
            return True
        cpu_taken |= pod_cpus
    return False


def _assigned_twice(pods: Sequence[PodResources]) -> list[Finding]:
    return _assigned_twice_findings(pods) if _any_assigned_twice(pods) else []


def _assigned_twice_findings(pods: Sequence[PodResources]) -> list[Finding]:
    found = []
    cpu_owner: dict[int, str] = {}
    device_owner: dict[tuple[str, str], str] = {}
    for pod in pods:
        in_pod: dict[int, str] = {}
        for container in pod.containers:
            owner = f"{_name(pod)} container {container.name}"
            clash = sorted(c for c in container.cpu_ids if c in in_pod)
            if clash:
                found.append(_twice("CPUs " + format_cpuset(clash), owner, {in_pod[c] for c in clash}))
            in_pod.update((c, owner) for c in container.cpu_ids)
            mine = {(d.resource_name, i) for d in container.devices for i in d.device_ids}
            for key in sorted(k for k in mine if k in device_owner):
                found.append(
                    _twice(f"{key[0]} {key[1]}", owner, {device_owner[key]}, "device_assigned_twice")
                )
            device_owner.update((k, owner) for k in mine)
        # Pod-level CPUs include the pod's own containers' CPUs: only other pods' count.
        pod_cpus = pod.cpu_ids | in_pod.keys()
        clash = sorted(c for c in pod_cpus if c in cpu_owner)
        if clash:
            found.append(_twice("CPUs " + format_cpuset(clash), _name(pod), {cpu_owner[c] for c in clash}))
        cpu_owner.update((c, _name(pod)) for c in pod_cpus)
    return found


def _twice(what: str, owner: str, others: set[str], kind: str = "cpu_assigned_twice") -> Finding:
    return Finding(kind, f"{what} of {owner} also assigned to {', '.join(sorted(others))}")


def pod_is_clean(pod: PodResources) -> bool:
    """True when ``pod`` alone gives no finding: no empty name, no CPU or device in two of its
    containers. A List of clean pods with distinct names, CPUs and devices gives none at all,
    which is what lets :mod:`rte.agent.compute.podtally` skip this check for pods it has seen."""
    return not _empty_names(pod) and not _assigned_twice((pod,))


def check_listing(pods: Sequence[PodResources]) -> tuple[tuple[PodResources, ...], tuple[Finding, ...]]:
    """The pods to account (exact duplicates dropped) and the contradictions found."""
    findings: list[Finding] = []
    kept: list[PodResources] = []
    seen: dict[tuple[str, str], list[PodResources]] = {}
    for pod in pods:
        findings.extend(_empty_names(pod))
        entries = seen.setdefault((pod.namespace, pod.name), [])
        if entries:
            same = pod in entries
            findings.append(
                Finding(
                    "duplicate_pod",
                    f"{_name(pod)} is listed {len(entries) + 1} times"
                    + (" (identical entries, charged once)" if same else " (different entries, all charged)"),
                )
            )
            if same:
                continue
        entries.append(pod)
        kept.append(pod)
    findings.extend(_assigned_twice(kept))
    return tuple(kept), tuple(findings)
