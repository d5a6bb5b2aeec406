"""The node-side commands' command lines: ``rte fingerprint``, ``rte dump``, ``rte run``.

Only click and light modules load here; each command imports its implementation
(:mod:`rte.commands.fingerprint`, :mod:`rte.commands.dump`, :mod:`rte.commands.run`) when it
runs, so ``rte --help`` and ``rte dump`` start fast. :mod:`rte.cli` assembles the commands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from rte.commands.errors import reports_errors
from rte.commands.options import SettingsCommand, setting_flags
from rte.commands.renamed import former_flag
from rte.model.vocabulary import FingerprintMethod, NumaPlacementMode, ZoneNames

if TYPE_CHECKING:
    from rte.settings.schema import Schema

F = TypeVar("F", bound=Callable[..., Any])


_METHODS = click.Choice([m.value for m in FingerprintMethod], case_sensitive=False)


def _method_option(help_text: str) -> Callable[[F], F]:
    """The fingerprint method flag shared by `fingerprint` and `dump` (as `rte run` spells it)."""
    option = click.option(
        "--fingerprint-method",
        "method",
        type=_METHODS,
        default=FingerprintMethod.WITH_EXCLUSIVE_RESOURCES.value,
        show_default=True,
        help=help_text,
    )
    former = former_flag("--method", "method", type=_METHODS)

    def decorate(func: F) -> F:
        return option(former(func))

    return decorate


@click.command(
    "fingerprint", short_help="Print the pod-set fingerprint of a pod list or of a kubelet's pods."
)
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


@click.command("dump", short_help="Print the NRT this node would publish (writes nothing).")
@click.option(
    "--sysfs-root",
    "--sysfs",
    "sysfs_root",
    default=None,
    help="sysfs root (holds devices/system/node) [default: /sys].",
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
    "--kubelet-root",
    "kubelet_dir",
    default=None,
    help="Kubelet root dir; its cpu_manager_state and memory_manager_state, when present, add what"
    " init containers still hold and settle multi-NUMA memory blocks.",
)
@click.option(
    "--numa-placement",
    type=click.Choice([m.value for m in NumaPlacementMode], case_sensitive=False),
    default=NumaPlacementMode.CONTAINER.value,
    show_default=True,
    help="container: publish which NUMA node each exclusive container sits on (numaplacement"
    " attributes, single-numa-node policy only); none: do not.",
)
@click.option(
    "--zone-names",
    type=click.Choice([m.value for m in ZoneNames], case_sensitive=False),
    default=ZoneNames.NUMA_ID.value,
    show_default=True,
    help="numa-id: zones node-<kernel NUMA id>; dense: node-0..node-<k-1> by ascending id, for"
    " consumers that crash on sparse ids (docs/compatibility.md).",
)
@_method_option("Which pods the fingerprint covers.")
@former_flag("--kubelet-dir", "kubelet_dir")
@reports_errors
def dump_cmd(
    sysfs_root: str | None,
    node_name: str | None,
    output: str,
    podresources: str | None,
    no_kubelet: bool,
    kubelet_config: str | None,
    kubelet_dir: str | None,
    numa_placement: str,
    zone_names: str,
    method: str,
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
        zone_names=ZoneNames.parse(zone_names, "--zone-names"),
        ask_kubelet=not no_kubelet,
    )


def _agent_schema() -> Schema[Any]:
    from rte.agent.settings import AGENT_SCHEMA

    return AGENT_SCHEMA


@click.command(
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
