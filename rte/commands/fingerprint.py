"""``rte fingerprint``: the pod-set fingerprint of a list of pods, like the reference ``pfp`` tool."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from rte.errors import InputError
from rte.model import fingerprint as fp


def parse_pod_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Yield ``(namespace, name)`` from ``NAMESPACE NAME`` lines.

    Comment lines (``#``) and lines with fewer than two whitespace-separated fields are skipped;
    fields after the second are ignored.
    """
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        fields = line.split()
        if len(fields) >= 2:
            yield fields[0], fields[1]


def fingerprint_lines(
    stream: TextIO,
    *,
    trace: bool = False,
    node_name: str = "",
    expected: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> str:
    """Fingerprint the pods listed in ``stream``; print it as the last stdout line."""
    out = out or sys.stdout
    err = err or sys.stderr
    tracer = fp.TracingFingerprint(node_name=node_name)
    try:
        for namespace, name in parse_pod_lines(stream):
            tracer.add(namespace, name)
    except UnicodeDecodeError as e:
        raise InputError(getattr(stream, "name", "input"), f"not UTF-8 text: {e.reason}") from e
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
