"""The ``rte run --no-publish`` sink: each new object printed on stdout instead of written."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from typing import TextIO

from rte.agent.loop import OutputClosed
from rte.model.nrt import to_nrt
from rte.model.topology import NodeTopology


def printer(output: str, out: TextIO) -> Callable[[NodeTopology], None]:
    """The ``--no-publish`` sink: YAML documents separated by ``---``, or one JSON object per line.

    Each object is rendered whole before it is written. When the reader has gone away (``| head``),
    the sink raises :class:`~rte.agent.loop.OutputClosed` and the agent stops quietly.
    """
    count = 0

    def sink(topology: NodeTopology) -> None:
        nonlocal count
        obj = to_nrt(topology)
        if output == "json":
            text = json.dumps(obj) + "\n"
        else:
            import yaml

            text = ("---\n" if count else "") + yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)
        try:
            out.write(text)
            out.flush()
        except BrokenPipeError as e:
            _discard_stdout(out)
            raise OutputClosed() from e
        count += 1

    return sink


def _discard_stdout(out: TextIO) -> None:
    """Point the process's stdout at /dev/null when ``out`` is stdout, so the interpreter's last
    flush at exit finds nothing to complain about."""
    if out is sys.stdout:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
