"""Change what the local fake kubelet serves, and look at the NRT the agent stored.

Works on the RUN_DIR of ``rte.testing.local_doubles`` (started by ``hack/run-local.sh``)::

    python -m rte.testing.local_pods --run-dir DIR add demo --cpus 6,8 --memory 1Gi --zone 0
    python -m rte.testing.local_pods --run-dir DIR remove demo
    python -m rte.testing.local_pods --run-dir DIR list       # pods the fake kubelet lists
    python -m rte.testing.local_pods --run-dir DIR show       # the stored NRT, one line per zone
    python -m rte.testing.local_pods --run-dir DIR watch      # a line each time the stored NRT changes

``add``/``remove`` rewrite ``DIR/scenario/list.protojson.json`` (atomically); the fake kubelet
reloads it, and a running agent notices on its next List poll. ``RTE_LOCAL_RUN_DIR`` can replace
``--run-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rte.model.quantity import parse_quantity

NRT_PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies/"


def _list_path(run_dir: Path) -> Path:
    return run_dir / "scenario" / "list.protojson.json"


def _load(run_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_list_path(run_dir).read_text())
    doc.setdefault("podResources", [])
    return doc


def _save(run_dir: Path, doc: dict[str, Any]) -> None:
    path = _list_path(run_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def _topology(zone: int) -> dict[str, Any]:
    return {"nodes": [{"ID": str(zone)}]}


def add(run_dir: Path, args: argparse.Namespace) -> None:
    doc = _load(run_dir)
    container: dict[str, Any] = {"name": "app"}
    if args.cpus:
        container["cpuIds"] = [c.strip() for c in args.cpus.split(",") if c.strip()]
    if args.memory:
        size = int(parse_quantity(args.memory))
        container["memory"] = [{"memoryType": "memory", "size": str(size), "topology": _topology(args.zone)}]
    if args.device:
        resource, _, device_id = args.device.partition("=")
        container["devices"] = [
            {"resourceName": resource, "deviceIds": [device_id], "topology": _topology(args.zone)}
        ]
    pods = [
        p for p in doc["podResources"] if (p.get("namespace"), p.get("name")) != (args.namespace, args.name)
    ]
    pods.append({"namespace": args.namespace, "name": args.name, "containers": [container]})
    doc["podResources"] = pods
    _save(run_dir, doc)
    print(f"kubelet now lists {args.namespace}/{args.name}")


def remove(run_dir: Path, args: argparse.Namespace) -> None:
    doc = _load(run_dir)
    before = len(doc["podResources"])
    doc["podResources"] = [
        p for p in doc["podResources"] if (p.get("namespace"), p.get("name")) != (args.namespace, args.name)
    ]
    if len(doc["podResources"]) == before:
        sys.exit(f"no pod {args.namespace}/{args.name} in {_list_path(run_dir)}")
    _save(run_dir, doc)
    print(f"kubelet no longer lists {args.namespace}/{args.name}")


def list_pods(run_dir: Path, args: argparse.Namespace) -> None:
    for pod in _load(run_dir)["podResources"]:
        cpus = sorted({int(c) for ctr in pod.get("containers", []) for c in ctr.get("cpuIds", [])})
        print(f"{pod.get('namespace')}/{pod.get('name')}  exclusive cpus: {cpus or '-'}")


def _nrt(run_dir: Path) -> dict[str, Any] | None:
    ready = json.loads((run_dir / "ready.json").read_text())
    request = urllib.request.Request(
        ready["apiserver"] + NRT_PATH + ready["node"], headers={"Authorization": f"Bearer {ready['token']}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            obj: dict[str, Any] = json.loads(response.read())
            return obj
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def _summary(obj: dict[str, Any] | None) -> str:
    if obj is None:
        return "no NRT stored yet"
    lines = [f"NRT {obj['metadata']['name']} resourceVersion {obj['metadata']['resourceVersion']}"]
    attributes = {a["name"]: a["value"] for a in obj.get("attributes", [])}
    lines.append(f"  fingerprint {attributes.get('nodeTopologyPodsFingerprint', '-')}")
    for zone in obj.get("zones", []):
        res = {r["name"]: r for r in zone.get("resources", [])}
        parts = [f"{name} {r['available']}/{r['allocatable']}" for name, r in sorted(res.items())]
        lines.append(f"  {zone['name']}: available/allocatable " + ", ".join(parts))
    return "\n".join(lines)


def show(run_dir: Path, args: argparse.Namespace) -> None:
    print(_summary(_nrt(run_dir)))


def watch(run_dir: Path, args: argparse.Namespace) -> None:
    last = None
    try:
        while True:
            obj = _nrt(run_dir)
            version = obj["metadata"]["resourceVersion"] if obj else None
            if version != last:
                last = version
                print(time.strftime("%H:%M:%S"), _summary(obj), flush=True)
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rte.testing.local_pods",
        description="Drive the local fake kubelet and inspect the stored NRT.",
    )
    parser.add_argument("--run-dir", type=Path, default=os.environ.get("RTE_LOCAL_RUN_DIR"))
    commands = parser.add_subparsers(dest="command", required=True)
    p_add = commands.add_parser("add", help="the kubelet admits a pod")
    p_add.add_argument("name")
    p_add.add_argument("--namespace", default="default")
    p_add.add_argument("--cpus", default="", help="exclusive CPU ids, e.g. 6,8")
    p_add.add_argument("--memory", default="", help="NUMA-bound memory, e.g. 1Gi")
    p_add.add_argument(
        "--device", default="", help="RESOURCE=DEVICE_ID, e.g. intel.com/intel_sriov_netdevice=0000:3b:02.4"
    )
    p_add.add_argument("--zone", type=int, default=0, help="NUMA zone of the memory and device")
    p_remove = commands.add_parser("remove", help="the pod is gone")
    p_remove.add_argument("name")
    p_remove.add_argument("--namespace", default="default")
    commands.add_parser("list", help="pods the fake kubelet lists")
    commands.add_parser("show", help="the stored NRT, one line per zone")
    commands.add_parser("watch", help="print the stored NRT each time it changes")
    args = parser.parse_args(argv)
    if args.run_dir is None:
        parser.error("give --run-dir (or set RTE_LOCAL_RUN_DIR)")
    handlers = {"add": add, "remove": remove, "list": list_pods, "show": show, "watch": watch}
    try:
        handlers[args.command](args.run_dir, args)
    except (OSError, urllib.error.URLError) as e:  # run-local.sh stopped, or another run dir
        reason = getattr(e, "reason", None) or e
        print(
            f"local_pods: error: {args.run_dir}: {reason} (is hack/run-local.sh still running?)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
