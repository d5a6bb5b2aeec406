"""``rte fit``: where would this pod fit NUMA-aligned? Filter and Score over NRT files.

The same decisions the scheduler extender makes, for a person at a terminal: a Pod manifest, the
NRT objects of the candidate nodes (files holding one object, several YAML documents, or a
``...List``; YAML or JSON) and optionally the Node objects, whose ``status.allocatable`` enables
the "resource not allocatable on the node" check. No reserve cache is involved: the NRTs are
taken as they are. ``--compat`` chooses the rules: the kubelet's admission (the default) or the
reference plugin's decisions.

Nodes are reported in the order their NRTs were given, then Nodes that have no NRT (they pass
the NUMA filter and score 0, like the reference plugin).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from rte.consumer.api import Decision, NodeCandidate, evaluate, node_allocatable
from rte.consumer.numaview import build_view
from rte.consumer.score import ScoringStrategy
from rte.consumer.store import topologies_from_file
from rte.consumer.strategies import DEFAULT_STRATEGY_NAME, strategy_name, weight_table
from rte.errors import InputError
from rte.model.pod import Pod, pod_from_manifest
from rte.model.quantity import Amount
from rte.model.topology import NodeTopology
from rte.model.vocabulary import Compat
from rte.yamlfile import read_objects

OUTPUTS = ("table", "json")


def load_pod(path: Path) -> Pod:
    """The one Pod in ``path``; errors name the file and the field."""
    pods = [pod_from_manifest(obj, source=where) for where, obj in read_objects(path)]
    if len(pods) != 1:
        raise InputError(str(path), f"expected one Pod, found {len(pods)}")
    return pods[0]


def load_node_allocatable(paths: Sequence[Path]) -> dict[str, dict[str, Amount]]:
    """Node name -> parsed ``status.allocatable`` for every Node object in ``paths``."""
    out: dict[str, dict[str, Amount]] = {}
    for path in paths:
        for where, obj in read_objects(path):
            allocatable = node_allocatable(obj, source=where)  # checks it is a Node mapping
            metadata = obj.get("metadata")
            name = metadata.get("name") if isinstance(metadata, Mapping) else None
            if not isinstance(name, str) or not name:
                raise InputError(f"{where}: metadata.name", "a Node needs a name")
            if name in out:
                raise InputError(f"{where}: metadata.name", f"Node {name!r} is given twice")
            out[name] = allocatable
    return out


def load_topologies(paths: Sequence[Path]) -> list[NodeTopology]:
    """Every NRT in ``paths``, in order; a node given twice is an error (which one would count?)."""
    seen: dict[str, Path] = {}
    out: list[NodeTopology] = []
    for path in paths:
        for topology in topologies_from_file(path):
            if topology.name in seen:
                raise InputError(
                    str(path),
                    f"NodeResourceTopology {topology.name!r} is also given in {seen[topology.name]}",
                )
            seen[topology.name] = path
            out.append(topology)
    return out


def candidates(
    topologies: Sequence[NodeTopology], allocatable: Mapping[str, Mapping[str, Amount]] | None
) -> list[NodeCandidate]:
    """One candidate per NRT (in order), then one per Node without an NRT."""
    out = [
        NodeCandidate(t.name, build_view(t), None if allocatable is None else allocatable.get(t.name))
        for t in topologies
    ]
    if allocatable:
        with_nrt = {t.name for t in topologies}
        out += [
            NodeCandidate(name, None, alloc) for name, alloc in allocatable.items() if name not in with_nrt
        ]
    return out


def render_fit_table(decisions: Sequence[Decision], pod: Pod, strategy: ScoringStrategy) -> str:
    rows = [("NODE", "FITS", "SCORE", "REASON")]
    rows += [
        (d.node, "yes" if d.fits else "no", "-" if d.score is None else str(d.score), d.reason)
        for d in decisions
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)), r[3]]) for r in rows]
    fitting = [d for d in decisions if d.fits]
    summary = (
        f"pod {pod.namespace}/{pod.name} ({pod.qos_class}), strategy {strategy.type}: "
        f"fits {len(fitting)} of {len(decisions)} node(s)"
    )
    if fitting:
        best = max(fitting, key=lambda d: d.score or 0)  # first of the highest, as listed
        summary += f"; best {best.node} (score {best.score})"
    return "\n".join([*lines, "", summary]) + "\n"


def fit(
    pod_path: str,
    nrt_paths: Sequence[str],
    *,
    node_paths: Sequence[str] = (),
    strategy: str | None = None,
    weights: Sequence[str] = (),
    compat: str = Compat.KUBELET,
    output: str = "table",
    out: TextIO | None = None,
) -> list[Decision]:
    """Evaluate the pod in ``pod_path`` on every node and print the verdicts; returns them."""
    scoring = fit_scoring(strategy, weights, output)
    rules = Compat.parse(compat, "--compat")
    if not nrt_paths and not node_paths:
        raise InputError("NRT", "give at least one NodeResourceTopology file (or --node file)")
    pod = load_pod(Path(pod_path))
    topologies = load_topologies([Path(p) for p in nrt_paths])
    allocatable = load_node_allocatable([Path(p) for p in node_paths]) if node_paths else None
    decisions = evaluate(pod, candidates(topologies, allocatable), scoring, compat=rules)
    write_decisions(decisions, pod, scoring, output, out)
    return decisions


def fit_scoring(strategy: str | None, weights: Sequence[str], output: str) -> ScoringStrategy:
    """The score strategy of the flags; also checks ``--output`` before anything is read."""
    if output not in OUTPUTS:
        raise InputError("--output", f"unknown format {output!r}; expected one of {', '.join(OUTPUTS)}")
    return ScoringStrategy(strategy_name(strategy or DEFAULT_STRATEGY_NAME), weight_table(weights))


def write_decisions(
    decisions: Sequence[Decision], pod: Pod, scoring: ScoringStrategy, output: str, out: TextIO | None
) -> None:
    stream = out if out is not None else sys.stdout
    if output == "json":
        stream.write(json.dumps([d.to_dict() for d in decisions], indent=2) + "\n")
    else:
        stream.write(render_fit_table(decisions, pod, scoring))
