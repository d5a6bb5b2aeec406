"""The ``rte`` command line. Commands parse options and call into the library; nothing else.

Heavy imports (gRPC, the Kubernetes client, YAML) happen inside the commands that need them, so
``rte dump`` and ``rte fingerprint`` start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rte import __version__
from rte.commands.errors import reports_errors
from rte.commands.kubeflags import KubeFlags, kube_options
from rte.commands.options import SettingsCommand, setting_flags
from rte.consumer.strategies import DEFAULT_STRATEGY_NAME, STRATEGIES
from rte.errors import InputError
from rte.model.vocabulary import FingerprintMethod, NumaPlacementMode

if TYPE_CHECKING:
    from rte.settings.schema import Schema

F = TypeVar("F", bound=Callable[..., Any])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rte")
def main() -> None:
    """rte: per-NUMA-zone resource topology for Kubernetes nodes.

    The agent (`rte run`, `rte dump`) publishes NodeResourceTopology objects; the consumer
    (`rte fit`) decides where pods fit NUMA-aligned.
    """


def _method_option(help_text: str) -> Callable[[F], F]:
    """The fingerprint method flag shared by `fingerprint` and `dump`."""
    return click.option(
        "--method",
        type=click.Choice([m.value for m in FingerprintMethod], case_sensitive=False),
        default=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value,
        show_default=True,
        help=help_text,
    )


@main.command("fingerprint", short_help="Print the pod-set fingerprint of a pod list or of a kubelet's pods.")
@click.argument("file", type=click.File("r", encoding="utf-8"), default="-")
@click.option("--trace", is_flag=True, help="Write the computation trace (Status JSON) to stderr.")
@click.option("--node-name", default="", help="Node name recorded in the trace.")
@click.option(
    "--check", "expected", default=None, help="Compare with this fingerprint; exit 1 if it differs."
)
@click.option(
    "--podresources",
    default=None,
    help="Fingerprint what this kubelet lists (socket endpoint or scenario directory) instead of FILE.",
)
@_method_option("With --podresources: which pods count.")
@reports_errors
def fingerprint_cmd(
    file: Any, trace: bool, node_name: str, expected: str | None, podresources: str | None, method: str
) -> None:
    """Print the pod-set fingerprint of `NAMESPACE NAME` lines read from FILE (default stdin).

    Lines starting with `#` and lines with fewer than two fields are ignored.
    """
    from rte.commands.fingerprint import fingerprint_pairs, kubelet_pods, read_pod_lines

    pods = (
        kubelet_pods(podresources, method=FingerprintMethod(method)) if podresources else read_pod_lines(file)
    )
    fingerprint_pairs(pods, trace=trace, node_name=node_name, expected=expected)


@main.command("dump", short_help="Print the NRT this node would publish (writes nothing).")
@click.option(
    "--sysfs", "sysfs_root", default=None, help="sysfs root (holds devices/system/node) [default: /sys]."
)
@click.option("--node-name", default=None, help="Object name [default: this host's name].")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"], case_sensitive=False),
    default="table",
    show_default=True,
)
@click.option(
    "--podresources",
    default=None,
    help="Kubelet podresources endpoint (unix socket) or a scenario directory; it must answer"
    " [default: unix:///var/lib/kubelet/pod-resources/kubelet.sock, if there].",
)
@click.option(
    "--no-kubelet", is_flag=True, help="Ask no kubelet: hardware capacity (allocatable = available)."
)
@click.option("--kubelet-config", default=None, help="Kubelet config file (YAML or /configz JSON).")
@click.option(
    "--kubelet-dir",
    default=None,
    help="Kubelet root dir; its cpu_manager_state and memory_manager_state, when present, add what"
    " init containers still hold and settle multi-NUMA memory blocks.",
)
@_method_option("Which pods the fingerprint covers.")
@click.option(
    "--numa-placement",
    type=click.Choice([m.value for m in NumaPlacementMode], case_sensitive=False),
    default=NumaPlacementMode.CONTAINER.value,
    show_default=True,
    help="container: publish which NUMA node each exclusive container sits on (numaplacement"
    " attributes, single-numa-node policy only); none: do not.",
)
@reports_errors
def dump_cmd(
    sysfs_root: str | None,
    node_name: str | None,
    output: str,
    podresources: str | None,
    no_kubelet: bool,
    kubelet_config: str | None,
    kubelet_dir: str | None,
    method: str,
    numa_placement: str,
) -> None:
    """Print the NodeResourceTopology this node would publish (nothing is written)."""
    from rte.commands.dump import dump

    dump(
        sysfs_root=sysfs_root,
        node_name=node_name,
        output=output,
        podresources=podresources,
        kubelet_config=kubelet_config,
        kubelet_dir=kubelet_dir,
        method=FingerprintMethod(method),
        numa_placement=NumaPlacementMode.parse(numa_placement, "--numa-placement"),
        ask_kubelet=not no_kubelet,
    )


def _agent_schema() -> Schema[Any]:
    from rte.agent.settings import AGENT_SCHEMA

    return AGENT_SCHEMA


@main.command(
    "run",
    cls=SettingsCommand,
    schema=_agent_schema,
    config_help="YAML settings file (keys as in --dump-config).",
    short_help="Run the node agent: publish this node's NRT and keep it current.",
)
@click.option("--once", is_flag=True, help="Run one cycle and exit (status 1 if it failed).")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["yaml", "json"], case_sensitive=False),
    default="yaml",
    show_default=True,
    help="With --no-publish: print objects as YAML documents or JSON lines.",
)
@reports_errors
def run_cmd(config_file: str | None, dump_config: bool, once: bool, output: str, **options: Any) -> None:
    """Run the node agent: publish this node's NodeResourceTopology and keep it current.

    Settings come from defaults < --config FILE < RTE_* environment < flags (see --dump-config).
    With --no-publish nothing is written: each new object is printed instead (no cluster needed).
    """
    from rte.commands.run import run

    run(
        config_file=config_file,
        flags=setting_flags(_agent_schema(), options),
        once=once,
        dump_config=dump_config,
        output=output.lower(),
    )


@main.command("fit", short_help="Show on which NRTs a pod fits NUMA-aligned, why not, and its score.")
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


@main.command(
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


# `rte simulate`: its module imports only click at the top; the simulator loads when it runs.
from rte.commands.simulate import simulate_cmd  # noqa: E402
from rte.commands.views import explain_cmd, top_cmd  # noqa: E402

main.add_command(simulate_cmd)
main.add_command(top_cmd)
main.add_command(explain_cmd)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kubectl-rte")
@kube_options
@click.pass_context
def kubectl_main(ctx: click.Context, kube: KubeFlags) -> None:
    """kubectl rte: NUMA-aware placement views of the current cluster (a kubectl plugin).

    kubectl's --kubeconfig, --context, -n and --request-timeout work after `rte` or after the
    command: `kubectl rte --context prod top`, `kubectl rte top --context prod`.
    """
    ctx.obj = kube


kubectl_main.add_command(top_cmd)
kubectl_main.add_command(explain_cmd)
kubectl_main.add_command(fit_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
