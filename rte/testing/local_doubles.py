"""The fake kubelet and the apiserver double in one process, for trying ``rte run`` by hand.

    python -m rte.testing.local_doubles --run-dir /tmp/rte-local --scenario tests/fixtures/podres/X

Lays out RUN_DIR:

* ``scenario/list.protojson.json`` and ``get_allocatable_resources.protojson.json``: what the
  fake kubelet serves, converted to editable JSON. It reloads them within 0.2 s of a change,
  so editing them (or ``python -m rte.testing.local_pods add|remove``) is "the kubelet admitted or
  removed a pod";
* ``kubelet.sock``: the podresources socket; ``kubeconfig``: for the apiserver double, with
  the NRT CRD installed and the Node registered;
* ``ready.json``: the endpoints, written once everything listens (scripts wait for it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from rte.podres.v1 import api_pb2
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet, read_response

STEMS = {
    "list": api_pb2.ListPodResourcesResponse,
    "get_allocatable_resources": api_pb2.AllocatableResourcesResponse,
}


def copy_scenario(source: Path, target: Path) -> None:
    """Re-encode every response of ``source`` as protojson under ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for stem, message_type in STEMS.items():
        message = message_type()
        if read_response(source, stem, message):
            (target / f"{stem}.protojson.json").write_text(json_format.MessageToJson(message, indent=1))


def _stamps(directory: Path) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((p.name, p.stat().st_mtime_ns) for p in directory.glob("*.json")))


def _container_spec(container: Any) -> dict[str, Any]:
    """A container spec consistent with what the kubelet assigned it (for the agent's pod watch).

    Exclusive CPUs mean a Guaranteed container with that many CPUs; memory blocks give its memory;
    devices become extended-resource limits; a container with none of these has no resources.
    """
    limits: dict[str, str] = {}
    if container.cpu_ids:
        limits["cpu"] = str(len(container.cpu_ids))
    memory = sum(block.size for block in container.memory if block.memory_type == "memory")
    if memory or container.cpu_ids:
        limits["memory"] = str(memory or 64 * 2**20)
    for device in container.devices:
        limits[device.resource_name] = str(
            int(limits.get(device.resource_name, "0")) + len(device.device_ids)
        )
    spec: dict[str, Any] = {"name": container.name or "app", "image": "registry.k8s.io/pause:3.9"}
    if limits:
        spec["resources"] = {"limits": limits, "requests": dict(limits)}
    return spec


def sync_api_pods(api: FakeApiServer, node: str, listed: list[Any]) -> None:
    """Make the apiserver hold exactly the pods the fake kubelet lists, bound to ``node``.

    The agent's fingerprint counts the pods the API shows on its node that the kubelet lists;
    without them in the API it would always publish the empty set's fingerprint.
    """
    wanted = {(p.namespace, p.name): p for p in listed}
    present = {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in api.list_objects("pods")
        if o.get("spec", {}).get("nodeName") == node
    }
    for namespace, name in present - set(wanted):
        api.delete_pod(name, namespace)
    for (namespace, name), pod in wanted.items():
        if (namespace, name) not in present:
            containers = [_container_spec(c) for c in pod.containers] or [{"name": "app", "image": "pause"}]
            api.add_pod(name, namespace=namespace, node_name=node, containers=containers)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.local_doubles",
        description="Run the fake kubelet and the apiserver double together.",
    )
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--scenario", type=Path, required=True, help="podresources scenario directory")
    parser.add_argument("--node", default="worker-1", help="Node to register (default: %(default)s)")
    parser.add_argument("--port", type=int, default=0, help="apiserver port (default: any free one)")
    args = parser.parse_args(argv)

    run_dir: Path = args.run_dir
    scenario = run_dir / "scenario"
    copy_scenario(args.scenario, scenario)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    with FakeApiServer(port=args.port) as api, FakeKubelet(run_dir / "kubelet.sock", scenario) as kubelet:
        api.register_node(args.node)
        sync_api_pods(api, args.node, kubelet.pods())
        kubeconfig = api.write_kubeconfig(run_dir / "kubeconfig")
        ready = {
            "kubelet": kubelet.endpoint,
            "kubeconfig": str(kubeconfig),
            "apiserver": api.url,
            "token": api.token,
            "node": args.node,
        }
        tmp = run_dir / ".ready.json"
        tmp.write_text(json.dumps(ready, indent=1))
        os.replace(tmp, run_dir / "ready.json")
        print(f"fake kubelet on {kubelet.endpoint}, apiserver double on {api.url}", flush=True)
        seen = _stamps(scenario)
        while not done.wait(0.2):
            now = _stamps(scenario)
            if now != seen:
                seen = now
                try:
                    kubelet.set_scenario(scenario)
                except (OSError, ValueError, json_format.ParseError) as e:
                    print(f"fake kubelet: keeping the previous pods: {e}", flush=True)
                else:
                    sync_api_pods(api, args.node, kubelet.pods())
                    print(f"fake kubelet: now serving {len(kubelet.pods())} pods", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
