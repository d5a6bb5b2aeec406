"""The click commands of the live cluster views, ``rte top`` and ``rte explain``.

Registered in both ``rte`` and the kubectl plugin's group (``kubectl-rte``) by :mod:`rte.cli`.
This module imports only click at load time; the Kubernetes client and the consumer load when a
command runs, so ``rte --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import signal
import time

import click

from rte.commands.errors import reports_errors
from rte.commands.kubeflags import KubeFlags, kube_options
from rte.commands.renamed import former_flag

# The scheduler plugin's spellings (rte.model.vocabulary, rte.consumer.config), any case.
_INFORMER_MODES = ("Dedicated", "Shared")
_RESYNC_METHODS = ("Autodetect", "All", "OnlyExclusiveResources")


def _seconds(flag: str, text: str | None) -> float | None:
    from rte.durations import parse_duration
    from rte.errors import InputError

    if text is None:
        return None
    try:
        value = parse_duration(text, bare_seconds=True)
    except ValueError as e:
        raise InputError(flag, str(e)) from e
    if value <= 0:
        raise InputError(flag, "must be positive")
    return value


_lease_namespace = click.option(
    "--lease-namespace",
    default="rte",
    show_default=True,
    metavar="NS",
    help="Namespace of the agents' heartbeat Leases (named after their nodes); '' skips them.",
)
_stale_after = click.option(
    "--stale-after",
    default=None,
    metavar="DURATION",
    help="A Lease not renewed for this long marks the node stale [default: the Lease's own"
    " leaseDurationSeconds].",
)


@click.command("top", short_help="Per node and NUMA zone: what is free, and whether the NRT is current.")
@click.argument("names", nargs=-1, metavar="[NODE]...")
@click.option(
    "-l", "--selector", default=None, metavar="SELECTOR", help="Node label selector (key=value,...)."
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "wide", "json", "yaml"], case_sensitive=False),
    default="table",
    show_default=True,
    help="wide adds the published and computed fingerprints, the pods counted, full device names.",
)
@click.option("-w", "--watch", is_flag=True, help="Redraw every --interval until interrupted.")
@click.option(
    "--interval",
    default="2s",
    show_default=True,
    metavar="DURATION",
    help="With --watch: time between reads.",
)
@_lease_namespace
@_stale_after
@click.option(
    "--informer-mode",
    type=click.Choice(_INFORMER_MODES, case_sensitive=False),
    default="Dedicated",
    show_default=True,
    metavar="MODE",
    help="Which pods count for the fingerprint, as the scheduler's cache.informerMode: Dedicated or Shared.",
)
@click.option(
    "--resync-method",
    type=click.Choice(_RESYNC_METHODS, case_sensitive=False),
    default="Autodetect",
    show_default=True,
    metavar="METHOD",
    help="Which pods the fingerprint covers, as the scheduler's cache.resyncMethod: Autodetect (the"
    " NRT's method attribute says), All or OnlyExclusiveResources.",
)
@click.option(
    "--fingerprint/--no-fingerprint",
    default=True,
    show_default=True,
    help="Compare each NRT's fingerprint with the pods bound to its node (reads those pods).",
)
@kube_options
@reports_errors
def top_cmd(
    kube: KubeFlags,
    names: tuple[str, ...],
    selector: str | None,
    output: str,
    watch: bool,
    interval: str,
    lease_namespace: str,
    stale_after: str | None,
    informer_mode: str,
    resync_method: str,
    fingerprint: bool,
) -> None:
    """One line per node and NUMA zone: available/allocatable cpu, memory, hugepages and devices,
    the Topology Manager policy/scope, the NRT's age (since it last changed), the agent's Lease
    age and whether the NRT's fingerprint matches the node's pods.

    STATUS names what is off: LeaseStale and PodsMismatch mark data the scheduler should not
    trust yet; NoLease, NoFingerprint, NoNRT and NoNode say what is missing; NoPolicy, an NRT
    without a Topology Manager policy, which consumers treat as policy none.
    """
    from rte.commands.top import TopOptions, top
    from rte.consumer.config import ResyncMethod
    from rte.model.vocabulary import InformerMode

    opts = TopOptions(
        names=names,
        selector=selector,
        output=output.lower(),
        lease_namespace=lease_namespace,
        stale_after=_seconds("--stale-after", stale_after),
        informer_mode=InformerMode.parse(informer_mode, "--informer-mode"),
        resync_method=ResyncMethod(resync_method),
        fingerprints=fingerprint,
    )
    every = _seconds("--interval", interval) or 2.0
    if not watch:
        with contextlib.suppress(KeyboardInterrupt):
            top(kube.reader_factory(), opts)
        return
    # Ctrl-C is the way out of --watch. Taken as a KeyboardInterrupt it could land anywhere,
    # inside a lock of the HTTP client (whose close then waits for it forever): the handler only
    # notes it, and the watch ends between two screens (rte.runtime.signals).
    from rte.runtime.signals import SignalWaiter

    with SignalWaiter((signal.SIGINT,)) as signals:
        top(kube.reader_factory(), opts, watch=True, interval=every, sleep=lambda s: signals.wait(timeout=s))


@click.command(
    "explain", short_help="Why a pod is Pending: each node's NUMA verdict and what the closest lack."
)
@click.argument("pod", metavar="NAMESPACE/NAME")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml"], case_sensitive=False),
    default="table",
    show_default=True,
    help="Output format.",
)
@_lease_namespace
@_stale_after
@click.option(
    "--scheduler-profile",
    "nrt_schedulers",
    multiple=True,
    metavar="NAME",
    help="A scheduler name that reads NRTs (as the extender's --scheduler-profile); repeatable"
    " [default: topo-aware-scheduler].",
)
@former_flag("--nrt-scheduler", "nrt_schedulers", multiple=True)
@click.option(
    "--closest",
    "closest_count",
    default=3,
    show_default=True,
    metavar="N",
    help="How many near misses to show.",
)
@kube_options
@reports_errors
def explain_cmd(
    kube: KubeFlags,
    pod: str,
    output: str,
    lease_namespace: str,
    stale_after: str | None,
    nrt_schedulers: tuple[str, ...],
    closest_count: int,
) -> None:
    """For a Pending pod (NAMESPACE/NAME, or NAME with -n): each node's verdict with the reason
    the kubelet's Topology Manager would give, the nodes closest to fitting and what their best
    NUMA zone lacks, and whether the pod's scheduler reads NRTs at all.
    """
    from rte.commands.explain import explain
    from rte.consumer.config import DEFAULT_PROFILE

    namespace = "default" if "/" in pod else kube.default_namespace()
    reader = kube.reader_factory()(None)
    try:
        explain(
            reader,
            pod,
            namespace=namespace,
            output=output.lower(),
            lease_namespace=lease_namespace,
            stale_after=_seconds("--stale-after", stale_after),
            nrt_schedulers=nrt_schedulers or (DEFAULT_PROFILE,),
            closest_count=closest_count,
            now=time.time(),
        )
    finally:
        reader.close()
