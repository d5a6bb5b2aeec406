#!/usr/bin/env bash
# Build deploy/Containerfile with buildah (no daemon, chroot isolation, vfs storage) and check
# the result: `rte dump` inside the image against this machine's /sys mounted read-only.
#
# No container registry is needed: the base image is made here from Debian packages with
# mmdebstrap (bookworm: python3 3.11, libudev1 for pyudev, libstdc++6 for grpcio) and passed as
# BASE_IMAGE; rte and its dependencies come as wheels built outside the image with `pip wheel`
# and are installed with --no-index. (Where PyPI is reached through a TLS-intercepting proxy
# whose CA only the host trusts, pip inside the image could not verify it: one more reason.)
# Everything lives in a temporary buildah storage removed on exit; only the mmdebstrap tarball
# is cached (in $XDG_CACHE_HOME/rte-image, or ~/.cache/rte-image) because it takes a minute or
# two to make. Delete it to pick up Debian updates.
#
# Usage: hack/build-image.sh [--output FILE]
#   --output FILE   also write the image as an OCI archive (e.g. for `skopeo copy
#                   oci-archive:FILE docker://registry/rte:TAG`)
# Also builds localhost/rte:<version>-kubelet-state (deploy/kubelet-state-copier: one static Go program,
# FROM scratch) for the DaemonSet's kubelet-state container.
# Needs root (or user namespaces for mmdebstrap and buildah) and:
#   apt-get install -y buildah mmdebstrap golang-go
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
output=""
while (($#)); do
  case "$1" in
    --output) output="$(realpath -m "$2")"; shift 2 ;;
    *) echo "build-image: unknown argument $1 (usage: hack/build-image.sh [--output FILE])" >&2; exit 2 ;;
  esac
done

for tool in buildah mmdebstrap go; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-image: $tool is missing; install it with: apt-get install -y buildah mmdebstrap golang-go" >&2
    exit 1
  fi
done

version="$("$python" -c 'import tomllib,sys; print(tomllib.load(open(sys.argv[1],"rb"))["project"]["version"])' "$repo/pyproject.toml")"
image="localhost/rte:$version"
suite=bookworm
packages=python3,libudev1,libstdc++6
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rte-image"
base_tar="$cache/$suite-${packages//,/-}.tar"

work="$(mktemp -d)"
containers=()
cleanup() {
  local status=$?
  for c in "${containers[@]}"; do buildah "${storage[@]}" rm "$c" >/dev/null 2>&1 || true; done
  # vfs layers are plain directories; buildah's own cleanup unmounts whatever it still holds.
  buildah "${storage[@]}" rmi --all --force >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$status"
}
storage=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
trap cleanup EXIT
export BUILDAH_ISOLATION=chroot
start=$SECONDS
step() { echo "== [$((SECONDS - start))s] $*"; }

# 1. The base: Debian's python3 and libudev1, nothing else (no apt, no docs); cached tarball.
if [[ ! -s "$base_tar" ]]; then
  step "mmdebstrap: $suite with $packages (cached in $cache)"
  mkdir -p "$cache"
  mmdebstrap --quiet --variant=essential --include="$packages" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --format=tar "$suite" "$base_tar.partial"
  mv "$base_tar.partial" "$base_tar"
else
  step "base tarball from the cache: $base_tar"
fi
base_ctr="$(buildah "${storage[@]}" from scratch)"
containers+=("$base_ctr")
step "import the base"
buildah "${storage[@]}" add --quiet "$base_ctr" "$base_tar" / >/dev/null
buildah "${storage[@]}" config --env LANG=C.UTF-8 --cmd python3 "$base_ctr"
buildah "${storage[@]}" commit --quiet --rm "$base_ctr" localhost/rte-base:"$suite" >/dev/null
containers=()

# 2. The wheels: rte's, its dependencies' and pip's, for this Python (3.11 on Linux, as in the base).
step "pip wheel"
mkdir -p "$work/context/wheels"
"$python" -m pip wheel -qq --disable-pip-version-check --wheel-dir "$work/context/wheels" "$repo" pip

# 3. The image, exactly as deploy/Containerfile says, offline.
step "buildah bud $image"
buildah "${storage[@]}" bud --quiet --isolation chroot --pull=never --layers=false \
  --build-arg BASE_IMAGE=localhost/rte-base:"$suite" --build-arg PIP_OFFLINE=1 \
  -f "$repo/deploy/Containerfile" -t "$image" "$work/context" >/dev/null

# 4. Run it: the agent's own view of this machine, PCI devices read through pyudev/libudev.
ctr="$(buildah "${storage[@]}" from --pull-never "$image")"
containers+=("$ctr")
in_image() {
  buildah "${storage[@]}" run --isolation chroot --user 65532:65532 \
    --mount type=bind,source=/sys,destination=/sys,ro "$ctr" -- "$@"
}
step "in the image: rte dump (this machine's /sys, read-only)"
in_image rte dump
step "in the image: PCI devices through udev, grpc"
in_image python3 -c '
import grpc
from rte.host.pci import read_pci_devices
devices = read_pci_devices("/sys", use_udev=True)
print(len(devices), "PCI devices via pyudev/libudev; grpc", grpc.__version__)
'
step "in the image: /sys is mounted read-only"
in_image python3 -c 'import os, sys; sys.exit(0 if os.statvfs("/sys").f_flag & os.ST_RDONLY else "/sys is writable")'

# 5. The kubelet-state container's image: the static copier alone, FROM scratch (no shell).
copier_image="localhost/rte:$version-kubelet-state"
step "go build + buildah bud $copier_image"
mkdir -p "$work/copier"
(cd "$repo/deploy/kubelet-state-copier" \
  && CGO_ENABLED=0 GOOS=linux GOTOOLCHAIN=local go build -trimpath -ldflags=-s -o "$work/copier/kubelet-state-copier" .)
buildah "${storage[@]}" bud --quiet --isolation chroot --pull=never --layers=false \
  -f "$repo/deploy/kubelet-state-copier/Containerfile" -t "$copier_image" "$work/copier" >/dev/null
copier_ctr="$(buildah "${storage[@]}" from --pull-never "$copier_image")"
containers+=("$copier_ctr")
step "in $copier_image: the copier and nothing else"
listing="$(cd "$(buildah "${storage[@]}" mount "$copier_ctr")" && find . -mindepth 1 | sort | tr '\n' ' ')"
if [[ "$listing" != "./kubelet-state-copier " ]]; then
  echo "build-image: $copier_image holds more than the copier: $listing" >&2
  exit 1
fi
if buildah "${storage[@]}" run --isolation chroot "$copier_ctr" -- /bin/sh -c true 2>/dev/null; then
  echo "build-image: $copier_image has a shell" >&2
  exit 1
fi

size="$(buildah "${storage[@]}" images --format '{{.Size}}' "$image")"
echo "== $image: $size (base localhost/rte-base:$suite from mmdebstrap), built in $((SECONDS - start))s"
if [[ -n "$output" ]]; then
  buildah "${storage[@]}" push --quiet "$image" "oci-archive:$output:$image"
  step "wrote $output"
fi
