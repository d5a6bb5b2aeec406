#!/usr/bin/env bash
# Try the node agent on a laptop: a fake kubelet, an in-memory apiserver, and `rte run` between them.
#
#   hack/run-local.sh              # the Dell R640 fixture (2 NUMA zones, SR-IOV VFs, static policies)
#   hack/run-local.sh generated    # a synthetic 8-zone, 384-CPU node (rte.testing.fake_sysfs)
#   SYSFS=/path/to/sys KUBELET_CONFIG=cfg.yaml hack/run-local.sh SCENARIO_DIR
#
# Then, in another terminal, change what the kubelet reports and watch the NRT follow (printed
# below with the right run directory). Ctrl-C stops everything. Needs the project's venv
# (PYTHON=... to use another interpreter with rte installed).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
RUN_DIR=${RUN_DIR:-$(mktemp -d /tmp/rte-local.XXXXXX)}
NODE=${NODE:-worker-1}
HTTP=${HTTP_ADDRESS:-127.0.0.1:8080}
MODE=${1:-fixture}

case "$MODE" in
fixture)
    SCENARIO=tests/fixtures/podres/dell-r640-sriov-static
    SYSFS=tests/fixtures/sysfs/dell-r640-2s-xeon6230r-2numa-sriov-vfs/sys
    KUBELET_CONFIG=tests/fixtures/kubelet/config/dell-r640-sriov-static-kubelet-config.SYNTHETIC.yaml
    EXAMPLE="add demo --cpus 6,8,10,12 --memory 2Gi --zone 0"
    ;;
generated)
    "$PY" -m rte.testing.fake_sysfs "$RUN_DIR/generated" >/dev/null
    SCENARIO=$RUN_DIR/generated/scenario
    SYSFS=$RUN_DIR/generated/sys
    KUBELET_CONFIG=$RUN_DIR/kubelet-config.yaml
    cat >"$KUBELET_CONFIG" <<'EOF'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: single-numa-node
reservedSystemCPUs: "0-1"
EOF
    EXAMPLE="add demo --cpus 380,381 --memory 1Gi --zone 14"
    ;;
*)
    SCENARIO=$MODE
    SYSFS=${SYSFS:?set SYSFS to the sysfs root that matches $MODE}
    KUBELET_CONFIG=${KUBELET_CONFIG:-}
    EXAMPLE="add demo --cpus 4,6"
    ;;
esac

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

"$PY" -m rte.testing.local_doubles --run-dir "$RUN_DIR" --scenario "$SCENARIO" --node "$NODE" &
pids+=($!)
for _ in $(seq 100); do
    [ -f "$RUN_DIR/ready.json" ] && break
    sleep 0.1
done
[ -f "$RUN_DIR/ready.json" ] || { echo "the local doubles did not start" >&2; exit 1; }
KUBELET=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["kubelet"])' "$RUN_DIR/ready.json")

mkdir -p "$RUN_DIR/kubelet/device-plugins"
cat <<EOF

  run dir:  $RUN_DIR
  metrics:  curl -s http://$HTTP/metrics | grep ^rte_agent     (also /healthz, /readyz)

  In another terminal:
    export RTE_LOCAL_RUN_DIR=$RUN_DIR
    $PY -m rte.testing.local_pods watch    # one summary per stored NRT change
    $PY -m rte.testing.local_pods $EXAMPLE
    $PY -m rte.testing.local_pods remove demo
    $PY -m rte.testing.local_pods show
    touch $RUN_DIR/notify    # the notify-file trigger

EOF

config_flag=()
[ -n "$KUBELET_CONFIG" ] && config_flag=(--kubelet-config "$KUBELET_CONFIG")
"$PY" -m rte run \
    --node-name "$NODE" \
    --kubeconfig "$RUN_DIR/kubeconfig" \
    --podresources "$KUBELET" \
    --sysfs "$SYSFS" \
    "${config_flag[@]}" \
    --kubelet-root "$RUN_DIR/kubelet" \
    --notify-file "$RUN_DIR/notify" \
    --http-address "$HTTP" &
pids+=($!)
wait "${pids[-1]}"
