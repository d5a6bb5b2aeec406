#!/usr/bin/env bash
# Regenerate the Python stubs of the kubelet podresources API into rte/podres/v1/.
#
# Usage: hack/gen-protos.sh [OUT_ROOT]   (OUT_ROOT defaults to the repository root)
#
# protoc names generated modules after the .proto path it is given, and the *_pb2_grpc module
# imports the *_pb2 module by that path. Staging the proto as rte/podres/v1/api.proto makes the
# import read `from rte.podres.v1 import api_pb2`, which resolves inside our package.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo}"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$repo/.venv/bin/python" ]]; then python="$repo/.venv/bin/python"; else python=python3; fi
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rte/podres/v1" "$out/rte/podres/v1"
cp "$repo/protos/podresources/v1/api.proto" "$stage/rte/podres/v1/api.proto"

"$python" -m grpc_tools.protoc -I "$stage" \
    --python_out="$out" --grpc_python_out="$out" --pyi_out="$out" \
    "$stage/rte/podres/v1/api.proto"
