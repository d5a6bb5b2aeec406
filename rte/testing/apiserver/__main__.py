"""Run the apiserver double until interrupted: ``python -m rte.testing.apiserver --help``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from rte.testing.apiserver import DEFAULT_CRD, DEFAULT_TOKEN, FakeApiServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.apiserver",
        description="Run an in-memory kube-apiserver double until interrupted.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one")
    parser.add_argument("--kubeconfig-out", type=Path, help="write a kubeconfig for the server here")
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="bearer token clients must send")
    parser.add_argument("--anonymous", action="store_true", help="accept requests without a token")
    parser.add_argument("--no-crd", action="store_true", help="start without the NRT CRD installed")
    parser.add_argument("--crd", type=Path, default=DEFAULT_CRD, help="CRD manifest (default: the repo copy)")
    parser.add_argument("--node", action="append", default=[], help="register a Node with this name")
    parser.add_argument("--bookmark-interval", type=float, help="seconds between watch BOOKMARK events")
    args = parser.parse_args(argv)

    server = FakeApiServer(
        args.host,
        args.port,
        token=None if args.anonymous else args.token,
        crd_path=args.crd,
        crd_installed=not args.no_crd,
        bookmark_interval=args.bookmark_interval,
    )
    for node in args.node:
        server.register_node(node)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with server:
        print(f"fake apiserver listening on {server.url}", flush=True)
        if args.kubeconfig_out:
            server.write_kubeconfig(args.kubeconfig_out)
            print(f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
