"""The ``rte`` command line (and ``kubectl rte``): the groups, and which commands they hold.

Every command is defined in :mod:`rte.commands` (its options in a module that loads only click,
its work in a module it imports when it runs), so heavy imports (gRPC, the Kubernetes client,
YAML) happen inside the commands that need them and ``rte dump`` and ``rte fingerprint`` start
fast.
"""

from __future__ import annotations

import click

from rte import __version__
from rte.commands.errors import OneLineGroup
from rte.commands.kubeflags import KubeFlags, kube_options
from rte.commands.node import dump_cmd, fingerprint_cmd, run_cmd
from rte.commands.scheduling import extender_cmd, fit_cmd
from rte.commands.simulate import simulate_cmd
from rte.commands.views import explain_cmd, top_cmd


@click.group("rte", cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rte")
def main() -> None:
    """rte: per-NUMA-zone resource topology for Kubernetes nodes.

    The agent (`rte run`, `rte dump`) publishes NodeResourceTopology objects; the consumer
    (`rte fit`) decides where pods fit NUMA-aligned.
    """


for command in (
    fingerprint_cmd,
    dump_cmd,
    run_cmd,
    fit_cmd,
    extender_cmd,
    simulate_cmd,
    top_cmd,
    explain_cmd,
):
    main.add_command(command)


@click.group("kubectl-rte", cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
