"""The ``rte`` command line. Commands parse options and call into the library; nothing else.

Heavy imports (gRPC, the Kubernetes client, YAML) happen inside the commands that need them, so
``rte dump`` and ``rte fingerprint`` start fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from rte import __version__
from rte.errors import InputError, RteError

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> None:
    click.echo(f"rte: error: {message}", err=True)
    sys.exit(code)


def reports_errors(func: F) -> F:
    """Turn our errors into one line on stderr: exit 2 for bad input, 1 for anything else."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as e:
            _fail(str(e), 2)
        except RteError as e:
            _fail(str(e), 1)
        except BrokenPipeError:  # `rte dump | head`: the reader left; nothing to report
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as e:  # never a traceback
            _fail(f"{e.filename or 'I/O'}: {e.strerror or e}", 1)
        return None

    return wrapper  # type: ignore[return-value]


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
        type=click.Choice(["all", "with-exclusive-resources"]),
        default="with-exclusive-resources",
        show_default=True,
        help=help_text,
    )


@main.command("fingerprint")
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

    pods = kubelet_pods(podresources, method=method) if podresources else read_pod_lines(file)
    fingerprint_pairs(pods, trace=trace, node_name=node_name, expected=expected)


@main.command("dump")
@click.option(
    "--sysfs", "sysfs_root", default=None, help="sysfs root (holds devices/system/node) [default: /sys]."
)
@click.option("--node-name", default=None, help="Object name [default: this host's name].")
@click.option(
    "-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True
)
@click.option(
    "--podresources",
    default=None,
    help="Kubelet podresources endpoint (unix socket) or a scenario directory"
    " [default: unix:///var/lib/kubelet/pod-resources/kubelet.sock].",
)
@click.option("--kubelet-config", default=None, help="Kubelet config file (YAML or /configz JSON).")
@click.option(
    "--kubelet-dir",
    default=None,
    help="Kubelet root dir; its memory_manager_state, when present, settles multi-NUMA memory blocks.",
)
@_method_option("Which pods the fingerprint covers.")
@reports_errors
def dump_cmd(
    sysfs_root: str | None,
    node_name: str | None,
    output: str,
    podresources: str | None,
    kubelet_config: str | None,
    kubelet_dir: str | None,
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
        method=method,
    )


# `rte run`: one flag per setting, generated in rte/commands/run_options.py (click and settings only).
from rte.commands.run_options import run_options, settings_flags  # noqa: E402


@main.command("run")
@run_options
@reports_errors
def run_cmd(config_file: str | None, once: bool, dump_config: bool, output: str, **options: Any) -> None:
    """Run the node agent: publish this node's NodeResourceTopology and keep it current.

    Settings come from defaults < --config FILE < RTE_* environment < flags (see --dump-config).
    With --no-publish nothing is written: each new object is printed instead (no cluster needed).
    """
    from rte.commands.run import run

    run(
        config_file=config_file,
        flags=settings_flags(options),
        once=once,
        dump_config=dump_config,
        output=output,
    )


@main.command("fit")
@click.option("--pod", "pod_path", required=True, metavar="POD.yaml", help="The Pod manifest to place.")
@click.option(
    "--node",
    "node_paths",
    multiple=True,
    metavar="NODE.yaml",
    help="Node objects (their status.allocatable is checked); repeatable.",
)
@click.option(
    "--strategy",
    default=None,
    metavar="NAME",
    help="MostAllocated, LeastAllocated (default), BalancedAllocation or LeastNUMANodes.",
)
@click.option(
    "--weight", "weights", multiple=True, metavar="RES=W", help="Score weight of a resource; repeatable."
)
@click.option("-o", "--output", default="table", metavar="FORMAT", help="table (default) or json.")
@click.argument("nrt_paths", nargs=-1, metavar="NRT.yaml...")
@reports_errors
def fit_cmd(
    pod_path: str,
    node_paths: tuple[str, ...],
    strategy: str | None,
    weights: tuple[str, ...],
    output: str,
    nrt_paths: tuple[str, ...],
) -> None:
    """Show on which nodes a pod fits NUMA-aligned, why not elsewhere, and each node's score.

    NRT files hold NodeResourceTopology objects: one, several YAML documents, or a List (YAML or
    JSON).
    """
    from rte.commands.fit import fit

    fit(pod_path, nrt_paths, node_paths=node_paths, strategy=strategy, weights=weights, output=output)


def _env(name: str) -> str:
    return f"RTE_EXTENDER_{name}"


@main.command("extender")
@click.option(
    "--listen", default=":8888", show_default=True, envvar=_env("LISTEN"), help="HOST:PORT to serve on."
)
@click.option("--kubeconfig", default=None, help="kubeconfig file [default: in-cluster, then $KUBECONFIG].")
@click.option(
    "--strategy", default=None, envvar=_env("STRATEGY"), help="Score strategy [default: LeastAllocated]."
)
@click.option(
    "--weight", "weights", multiple=True, envvar=_env("WEIGHT"), metavar="RES=W", help="Score weight."
)
@click.option(
    "--cache-resync-period",
    default="0",
    show_default=True,
    envvar=_env("CACHE_RESYNC_PERIOD"),
    metavar="DURATION",
    help="cacheResyncPeriodSeconds (5s, 1m, or bare seconds): > 0 enables the reserve cache (OverReserve).",
)
@click.option(
    "--discard-reserved", is_flag=True, envvar=_env("DISCARD_RESERVED"), help="discardReservedNodes."
)
@click.option("--foreign-pods-detect", default="All", show_default=True, envvar=_env("FOREIGN_PODS_DETECT"))
@click.option("--resync-method", default="Autodetect", show_default=True, envvar=_env("RESYNC_METHOD"))
@click.option("--informer-mode", default="Dedicated", show_default=True, envvar=_env("INFORMER_MODE"))
@click.option(
    "--scheduler-profile",
    "scheduler_profiles",
    multiple=True,
    envvar=_env("SCHEDULER_PROFILE"),
    help="schedulerName whose pods are ours (others are foreign) [default: topo-aware-scheduler].",
)
@click.option(
    "--heartbeat-namespace",
    default="rte",
    show_default=True,
    envvar=_env("HEARTBEAT_NAMESPACE"),
    help="Namespace of the agents' Leases; empty: no Lease watch.",
)
@click.option("--heartbeat-max-age", default="0", envvar=_env("HEARTBEAT_MAX_AGE"), metavar="DURATION")
@click.option("--stale-action", default="ignore", envvar=_env("STALE_ACTION"), show_default=True)
@click.option(
    "--stale-if-no-heartbeat",
    is_flag=True,
    envvar=_env("STALE_IF_NO_HEARTBEAT"),
    help="A node with no agent Lease at all counts as stale.",
)
@click.option("--resync-scope", default="All", show_default=True, envvar=_env("RESYNC_SCOPE"))
@click.option(
    "--dirty-after-failures",
    default="1",
    show_default=True,
    envvar=_env("DIRTY_AFTER_FAILURES"),
    metavar="N",
    help="Filter failures in a row before a node's fingerprint is checked (1: the reference).",
)
@click.option(
    "--absent-pod-grace",
    default="30s",
    show_default=True,
    envvar=_env("ABSENT_POD_GRACE"),
    metavar="DURATION",
    help="How long a reservation survives a flush while its pod is missing from the pod list.",
)
@click.option(
    "--follow-clean-nodes/--no-follow-clean-nodes",
    default=True,
    show_default=True,
    envvar=_env("FOLLOW_CLEAN_NODES"),
    help="Adopt new NRTs at once on nodes with no reservation and no mark (off: the reference).",
)
@click.option(
    "--startup-grace",
    default="0",
    show_default=True,
    envvar=_env("STARTUP_GRACE"),
    metavar="DURATION",
    help="After start, nodes not yet confirmed by a fingerprint match are not trusted this long.",
)
@click.option(
    "--load-mode", default="off", show_default=True, envvar=_env("LOAD_MODE"), help="off, filter or score."
)
@click.option(
    "--load-threshold",
    "load_thresholds",
    multiple=True,
    envvar=_env("LOAD_THRESHOLD"),
    metavar="ATTR=PERCENT",
    help="Zone attribute and the percent above which the zone is busy [default: cpuUtilizationPercent=80].",
)
@click.option(
    "--load-score-factor",
    default="0.5",
    show_default=True,
    envvar=_env("LOAD_SCORE_FACTOR"),
    help="Score mode: the factor applied to a node whose chosen zone is busy.",
)
@click.option(
    "--kubelet-accurate-sidecars",
    is_flag=True,
    envvar=_env("KUBELET_ACCURATE_SIDECARS"),
    help="Account sidecar containers as the kubelet does (the reference treats them as init containers).",
)
@click.option(
    "--max-request-body",
    default="32Mi",
    show_default=True,
    envvar=_env("MAX_REQUEST_BODY"),
    metavar="SIZE",
    help="Largest request body accepted (larger ones are answered 413 before they are read).",
)
@click.option(
    "--nrt-file",
    "nrt_files",
    multiple=True,
    metavar="NRT.yaml",
    help="Serve these NRTs instead of watching a cluster (no pods, no Leases).",
)
@click.option("--log-level", default="info", envvar=_env("LOG_LEVEL"), show_default=True)
@reports_errors
def extender_cmd(log_level: str, **options: Any) -> None:
    """Serve kube-scheduler's HTTP extender API (filter, prioritize) over watched NRTs."""
    import logging

    from rte.extender.app import run_extender
    from rte.extender.settings import extender_settings

    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise InputError("--log-level", f"unknown level {log_level!r}; expected debug, info or warning")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run_extender(extender_settings(**options))


# `rte simulate`: its module imports only click at the top; the simulator loads when it runs.
from rte.commands.simulate import simulate_cmd  # noqa: E402

main.add_command(simulate_cmd)


if __name__ == "__main__":  # pragma: no cover
    main()
