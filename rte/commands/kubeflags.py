"""kubectl's connection flags for the commands that read a live cluster, and the kubectl plugin's share.

``--kubeconfig``, ``--context``, ``-n/--namespace`` and ``--request-timeout`` mean what they mean
to kubectl, and so does their absence: ``$KUBECONFIG`` or ``~/.kube/config``, else the pod's
service account (:mod:`rte.runtime.kubeclient`).

As a kubectl plugin (``kubectl rte top``), kubectl runs ``kubectl-rte`` with every argument
after the plugin's name, unchanged, and its environment (so ``$KUBECONFIG`` arrives); it refuses
flags placed before the plugin's name (kubernetes/kubectl ``pkg/cmd/cmd.go``,
``HandlePluginCommand``). A user may still write them right after it (``kubectl rte --context
prod top``), so the plugin's group takes the same flags and hands them to its commands, whose
own flags win. This module imports only click; the Kubernetes client loads when a command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rte.cluster.reader import ClusterReader

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class KubeFlags:
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    request_timeout: str | None = None

    def given(self) -> bool:
        return self.kubeconfig is not None or self.context is not None

    def over(self, base: KubeFlags | None) -> KubeFlags:
        """These flags, with those not given taken from ``base`` (the plugin group's)."""
        if base is None:
            return self
        given = {k: v for k, v in vars(self).items() if v is not None}
        return replace(base, **given)

    def timeout_seconds(self) -> float:
        from rte.durations import parse_duration
        from rte.errors import InputError

        if self.request_timeout is None:
            return 10.0
        try:
            seconds = parse_duration(self.request_timeout, bare_seconds=True)
        except ValueError as e:
            raise InputError("--request-timeout", str(e)) from e
        if seconds <= 0:
            raise InputError("--request-timeout", "must be positive")
        return seconds

    def reader_factory(self) -> Callable[[str | None], ClusterReader]:
        """Opens a reader on the configured cluster (see :func:`rte.cluster.reader.open_cluster_reader`)."""

        def open_with(list_resource_version: str | None = None) -> ClusterReader:
            from rte.cluster.reader import open_cluster_reader

            return open_cluster_reader(
                self.kubeconfig,
                context=self.context,
                timeout=self.timeout_seconds(),
                list_resource_version=list_resource_version,
            )

        return open_with

    def default_namespace(self) -> str:
        """``-n``, else the context's namespace, else ``default`` (kubectl's rule)."""
        if self.namespace:
            return self.namespace
        from rte.runtime.kubeclient import default_namespace

        return default_namespace(self.kubeconfig, context=self.context)


def kube_options(func: F) -> F:
    """Add kubectl's connection flags to a command; it receives them as ``kube=KubeFlags``."""
    options = [
        click.option(
            "--kubeconfig",
            default=None,
            metavar="FILE",
            help="kubeconfig file [default: $KUBECONFIG, ~/.kube/config, else in-cluster].",
        ),
        click.option("--context", default=None, metavar="NAME", help="kubeconfig context to use."),
        click.option(
            "-n",
            "--namespace",
            default=None,
            metavar="NS",
            help="Namespace of a pod given by NAME [default: the context's, else default].",
        ),
        click.option(
            "--request-timeout",
            default=None,
            metavar="DURATION",
            help="Give up on one apiserver request after this long (10s, 1m) [default: 10s].",
        ),
    ]

    def collect(**kwargs: Any) -> Any:
        flags = KubeFlags(
            kwargs.pop("kubeconfig"),
            kwargs.pop("context"),
            kwargs.pop("namespace"),
            kwargs.pop("request_timeout"),
        )
        ctx = click.get_current_context()
        base = ctx.find_object(KubeFlags)
        return func(kube=flags.over(base), **kwargs)

    collect.__name__ = func.__name__
    collect.__doc__ = func.__doc__
    wrapped: Any = collect
    # Options declared below this decorator are already attached to ``func``: keep them.
    wrapped.__click_params__ = list(getattr(func, "__click_params__", []))
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped  # type: ignore[no-any-return]
