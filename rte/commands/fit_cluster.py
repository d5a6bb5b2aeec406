"""``rte fit`` against a live cluster: the NRTs and Nodes come from the apiserver, not from files.

The pod is a manifest file, or a pod the cluster holds (``NAMESPACE/NAME``, or ``NAME`` in the
namespace of ``-n`` or of the kubeconfig's context). Candidates are the cluster's Nodes, in name
order, each with its NRT when it has one and its ``status.allocatable``, as the scheduler sees
them; an NRT whose Node is gone is no candidate. The verdicts are those of the file mode
(:mod:`rte.commands.fit`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from rte.cluster.reader import ClusterReader
from rte.cluster.snapshot import read_statuses
from rte.commands.explain import parse_pod_ref
from rte.commands.fit import fit_scoring, load_pod, write_decisions
from rte.commands.kubeflags import KubeFlags
from rte.consumer.api import Decision, NodeCandidate, evaluate
from rte.consumer.numaview import build_view
from rte.errors import ConfigError, InputError
from rte.model.pod import Pod, pod_from_manifest
from rte.model.vocabulary import Compat

_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# A pod reference: an optional namespace (a DNS label) and a pod name (a DNS subdomain).
_POD_REF = re.compile(r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?/)?[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")


def is_pod_ref(text: str) -> bool:
    """Whether ``--pod`` names a pod in the cluster rather than a manifest file.

    An existing file always wins; so does anything ending like a manifest (``pod.yaml``), so a
    mistyped file name is reported as a missing file, not as a missing pod.
    """
    if Path(text).exists() or text.lower().endswith(_MANIFEST_SUFFIXES):
        return False
    return _POD_REF.fullmatch(text) is not None


def cluster_pod(reader: ClusterReader, ref: str, namespace: str, err: TextIO | None = None) -> Pod:
    """The pod ``ref`` from the cluster; a note on ``err`` when it is already bound."""
    ns, name = parse_pod_ref(ref, namespace)
    pod = pod_from_manifest(reader.pod(ns, name), source=f"pod {ns}/{name}")
    if pod.node_name:
        (err or sys.stderr).write(
            f"rte: note: pod {ns}/{name} is bound to {pod.node_name}; that node's NRT may already count it\n"
        )
    return pod


def fit_cluster(
    reader: ClusterReader,
    pod_ref: str,
    *,
    namespace: str = "default",
    strategy: str | None = None,
    weights: Sequence[str] = (),
    compat: str = Compat.KUBELET,
    output: str = "table",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> list[Decision]:
    """Evaluate the pod on every Node of the cluster and print the verdicts; returns them."""
    scoring = fit_scoring(strategy, weights, output)
    rules = Compat.parse(compat, "--compat")
    pod = cluster_pod(reader, pod_ref, namespace, err) if is_pod_ref(pod_ref) else load_pod(Path(pod_ref))
    statuses = read_statuses(reader, lease_namespace=None, fingerprints=False)
    candidates = [
        NodeCandidate(s.name, build_view(s.topology) if s.topology else None, s.allocatable)
        for s in statuses
        if s.node_exists
    ]
    decisions = evaluate(pod, candidates, scoring, compat=rules)
    write_decisions(decisions, pod, scoring, output, out)
    return decisions


def fit_in_cluster(
    kube: KubeFlags,
    pod_ref: str,
    *,
    strategy: str | None = None,
    weights: Sequence[str] = (),
    compat: str = Compat.KUBELET,
    output: str = "table",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> list[Decision]:
    """``rte fit`` without files: the cluster of ``kube`` (or the one kubectl would use)."""
    fit_scoring(strategy, weights, output)  # bad flags fail before any connection
    Compat.parse(compat, "--compat")
    try:
        reader = kube.reader_factory()(None)
    except ConfigError as e:
        if kube.given():
            raise
        raise InputError(
            "NRT",
            "give at least one NodeResourceTopology file (or --node file), or a cluster to read them"
            f" from: {e}",
        ) from e
    try:
        needs_namespace = is_pod_ref(pod_ref) and "/" not in pod_ref
        return fit_cluster(
            reader,
            pod_ref,
            namespace=kube.default_namespace() if needs_namespace else "default",
            strategy=strategy,
            weights=weights,
            compat=compat,
            output=output,
            out=out,
            err=err,
        )
    finally:
        reader.close()
