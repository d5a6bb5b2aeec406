"""``rte fingerprint``: the pod-set fingerprint of a list of pods, or of what a kubelet lists."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from rte.errors import ConfigError, InputError
from rte.model import fingerprint as fp
from rte.model.vocabulary import FingerprintMethod


def parse_pod_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Yield ``(namespace, name)`` from ``NAMESPACE NAME`` lines, like the reference ``pfp`` tool.

    Comment lines (``#``) and lines with fewer than two whitespace-separated fields are skipped;
    fields after the second are ignored.
    """
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) >= 2:
            yield fields[0], fields[1]


def fingerprint_pairs(
    pods: Iterable[tuple[str, str]],
    *,
    trace: bool = False,
    node_name: str = "",
    expected: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> str:
    """Print the fingerprint of ``pods`` as the last stdout line; the trace JSON goes to stderr.

    With ``expected``, a mismatch raises :class:`~rte.model.fingerprint.FingerprintMismatchError`
    (exit status 1) and a malformed or incompatible value an :class:`InputError` (exit status 2),
    after the computed value has been printed.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    tracer = fp.TracingFingerprint(node_name=node_name)
    for namespace, name in pods:
        tracer.add(namespace, name)
    computed = tracer.sign()
    failure: fp.FingerprintError | None = None
    if expected is not None:
        try:
            tracer.check(expected)
        except fp.FingerprintError as e:
            failure = e
    if trace:
        print(tracer.status.to_json(), file=err)
    print(computed, file=out)
    if isinstance(failure, fp.FingerprintMismatchError):
        raise failure  # a routine difference: exit status 1
    if failure is not None:  # malformed or incompatible: bad input, exit status 2
        raise InputError("--check", str(failure)) from failure
    return computed


def read_pod_lines(stream: TextIO) -> list[tuple[str, str]]:
    """The pods listed in ``stream``; undecodable text is an :class:`InputError`."""
    try:
        return list(parse_pod_lines(stream))
    except UnicodeDecodeError as e:
        raise InputError(getattr(stream, "name", "input"), f"not UTF-8 text: {e.reason}") from e


def kubelet_pods(endpoint: str, *, method: FingerprintMethod, timeout: float = 5.0) -> list[tuple[str, str]]:
    """The pods a live kubelet (or a scenario directory) lists that ``method`` counts.

    Without pod specs, ``with-exclusive-resources`` counts the pods the kubelet assigned
    exclusive resources to (see :mod:`rte.agent.compute.podset`).
    """
    from rte.agent.compute.podset import fingerprint_pods
    from rte.podres.reader import ONE_SHOT_BURST, ONE_SHOT_QPS, endpoint_problem, open_reader

    problem = endpoint_problem(endpoint)
    if problem:
        raise ConfigError("--podresources", f"{endpoint}: {problem}")
    reader = open_reader(endpoint, timeout=timeout, qps=ONE_SHOT_QPS, burst=ONE_SHOT_BURST)
    try:
        reader.wait_ready(timeout)
        pods = reader.list().pods
    finally:
        reader.close()
    return fingerprint_pods(pods, method)
