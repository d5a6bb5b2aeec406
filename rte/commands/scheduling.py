"""The scheduler-side commands' command lines: ``rte fit`` and ``rte extender``.

Only click and light modules load here; each command imports its implementation
(:mod:`rte.commands.fit`, :mod:`rte.commands.fit_cluster`, :mod:`rte.commands.extender`) when it
runs. :mod:`rte.cli` assembles the commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from rte.commands.errors import reports_errors
from rte.commands.kubeflags import KubeFlags, kube_options
from rte.commands.options import SettingsCommand, setting_flags
from rte.consumer.strategies import DEFAULT_STRATEGY_NAME, STRATEGIES
from rte.errors import InputError

if TYPE_CHECKING:
    from rte.settings.schema import Schema


@click.command("fit", short_help="Show on which NRTs a pod fits NUMA-aligned, why not, and its score.")
@click.option(
    "--pod",
    "pod_path",
    required=True,
    metavar="POD.yaml",
    help="The Pod manifest to place; reading a cluster, also a pod it holds: NAMESPACE/NAME, or NAME (-n).",
)
@click.option(
    "--node",
    "node_paths",
    multiple=True,
    metavar="NODE.yaml",
    help="Node objects; repeatable. On a node whose NRT is filtered, a requested resource missing"
    " from the Node's status.allocatable (by name; cpu, memory, pods and ephemeral-storage always"
    " count as present) means no fit. A Node without an NRT is listed too, and fits.",
)
@click.option(
    "--strategy",
    default=None,
    metavar="NAME",
    help=f"Score strategy: {', '.join(STRATEGIES)} (any case) [default: {DEFAULT_STRATEGY_NAME}].",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="RES=W",
    help="Score weight of a resource, a positive integer; repeatable [default: cpu=1, memory=1].",
)
@click.option(
    "--compat",
    default="kubelet",
    metavar="RULES",
    help="kubelet (default): decide as each node's kubelet admits the pod (every Topology Manager"
    " policy and scope, init containers, sidecars); reference: the reference scheduler plugin's"
    " decisions bit for bit (any case).",
)
@click.option("-o", "--output", default="table", metavar="FORMAT", help="table (default) or json.")
@click.argument("nrt_paths", nargs=-1, metavar="[NRT.yaml]...")
@kube_options
@reports_errors
def fit_cmd(
    kube: KubeFlags,
    pod_path: str,
    node_paths: tuple[str, ...],
    strategy: str | None,
    weights: tuple[str, ...],
    compat: str,
    output: str,
    nrt_paths: tuple[str, ...],
) -> None:
    """Show on which nodes a pod fits NUMA-aligned, why not elsewhere, and each node's score.

    NRT files hold NodeResourceTopology objects: one, several YAML documents, or a List (YAML or
    JSON). Without NRT and --node files, or with --kubeconfig or --context, the NRTs and Nodes are
    read from the cluster, found as kubectl finds it.
    """
    if kube.given() or not (nrt_paths or node_paths):
        from rte.commands.fit_cluster import fit_in_cluster

        if nrt_paths or node_paths:
            raise InputError("--kubeconfig", "the NRTs and Nodes come from the cluster: give no files")
        fit_in_cluster(
            kube, pod_path, strategy=strategy, weights=weights, compat=compat, output=output.lower()
        )
        return
    from rte.commands.fit import fit

    fit(
        pod_path,
        nrt_paths,
        node_paths=node_paths,
        strategy=strategy,
        weights=weights,
        compat=compat,
        output=output.lower(),
    )


def _extender_schema() -> Schema[Any]:
    from rte.extender.settings import EXTENDER_SCHEMA

    return EXTENDER_SCHEMA


@click.command(
    "extender",
    cls=SettingsCommand,
    schema=_extender_schema,
    config_help="YAML settings file (keys as in --dump-config).",
    short_help="Serve kube-scheduler's HTTP extender API over watched NRTs.",
)
@reports_errors
def extender_cmd(config_file: str | None, dump_config: bool, **options: Any) -> None:
    """Serve kube-scheduler's HTTP extender API (filter, prioritize) over watched NRTs.

    Settings come from defaults < --config FILE < RTE_EXTENDER_* environment < flags (see
    --dump-config).
    """
    from rte.commands.extender import extender

    extender(
        config_file=config_file, flags=setting_flags(_extender_schema(), options), dump_config=dump_config
    )
