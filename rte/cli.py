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
@click.option(
    "--method",
    type=click.Choice(["all", "with-exclusive-resources"]),
    default="with-exclusive-resources",
    show_default=True,
    help="With --podresources: which pods count.",
)
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
@click.option(
    "--method",
    type=click.Choice(["all", "with-exclusive-resources"]),
    default="with-exclusive-resources",
    show_default=True,
    help="Which pods the fingerprint covers.",
)
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


if __name__ == "__main__":  # pragma: no cover
    main()
