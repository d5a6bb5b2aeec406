"""``rte run``: the node agent. Loads the settings, then runs :class:`~rte.agent.app.AgentApp`.

Modes:

* default: the daemon. Publishes at start, then keeps the NRT current (see
  :mod:`rte.agent.loop`) until SIGTERM or SIGINT, then exits 0 within ``shutdown_timeout``.
* ``--once``: one cycle; exit status 1 (with the reason on stderr) when it failed.
* ``--no-publish``: no cluster at all; each new object is printed on stdout instead (YAML
  documents, or JSON lines with ``-o json``). Combines with ``--once``. When the reader of the
  output goes away (``| head``), the command ends quietly with status 1, as ``rte dump`` does.
* ``--dump-config``: print the effective settings as YAML and exit.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from rte.agent.app import AgentApp
from rte.agent.logs import configure_logging
from rte.agent.settings import dump_settings, load_settings
from rte.runtime.heap import limit_malloc_arenas
from rte.runtime.signals import SignalWaiter

log = logging.getLogger("rte.agent")
AGENT_MALLOC_ARENAS = 2
"""glibc malloc arenas the agent's threads share (2.0 MiB less at 5000 pods than glibc's 8 per core)."""


def run(
    *,
    config_file: str | None,
    flags: Mapping[str, Any],
    once: bool = False,
    dump_config: bool = False,
    output: str = "yaml",
    out: TextIO | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """The ``rte run`` command; raises :class:`RteError` subclasses for the CLI to report."""
    out = out or sys.stdout
    settings = load_settings(config_file=config_file, env=env, flags=flags)
    if dump_config:
        out.write(dump_settings(settings))
        return
    configure_logging(settings.log_level, settings.log_format)
    limit_malloc_arenas(AGENT_MALLOC_ARENAS)  # before any thread starts (rte.runtime.heap)
    app = AgentApp(settings, out=out, output=output)
    try:
        if once:
            app.run_once()
            return
        with SignalWaiter() as signals:
            app.start()
            if signals.wait(app.stop_event) is not None:
                log.info("received %s: shutting down", signals.name)
    finally:
        app.stop()
    if app.agent.output_closed:  # `rte run --no-publish | head`: end as `rte dump | head` does
        raise BrokenPipeError("the reader of the output went away")
