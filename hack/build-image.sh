#!/usr/bin/env bash
# Build the rte images for amd64 and arm64 with buildah (no daemon, chroot isolation, vfs
# storage), check each one by running it, and join each pair in a manifest list:
#
#   localhost/rte:<version>                 deploy/Containerfile: `rte run`, `rte extender`, ...
#   localhost/rte:<version>-kubelet-state   deploy/kubelet-state-copier: one static Go program,
#                                           FROM scratch, for the DaemonSet's kubelet-state container
#
# Each is a manifest list over <name>-amd64 and <name>-arm64 (Grace and other arm64 nodes pull
# theirs by the same reference). The image of the other architecture than this machine's is
# built and run under emulation: Debian's qemu-user-static and binfmt-support register
# /usr/libexec/qemu-binfmt/aarch64-binfmt-P (the script enables it when it is only disabled).
#
# No container registry is needed: each base image is made here from Debian packages with
# mmdebstrap --arch (bookworm: python3 3.11, libudev1 for pyudev, libstdc++6 for grpcio) and
# passed as BASE_IMAGE; rte and its dependencies come as wheels fetched outside the image (this
# architecture: `pip wheel`; the other: `pip download --platform` of the manylinux wheels, which
# every runtime dependency publishes for aarch64) and are installed with --no-index. (Where
# PyPI is reached through a TLS-intercepting proxy whose CA only the host trusts, pip inside the
# image could not verify it: one more reason.) Everything lives in a temporary buildah storage
# removed on exit; only the mmdebstrap tarballs are cached (in $XDG_CACHE_HOME/rte-image, or
# ~/.cache/rte-image) because they take minutes to make. Delete them to pick up Debian updates.
#
# Checks, in each image: `rte dump` against a fixture sysfs tree (tests/fixtures/sysfs); in the
# image of this machine's architecture also against this machine's /sys read-only, with PCI
# devices through udev; the copier image holds nothing but the copier, which runs.
#
# Usage: hack/build-image.sh [--arch LIST] [--output FILE]
#   --arch LIST     comma-separated architectures (default amd64,arm64)
#   --output FILE   also write both manifest lists with their images as OCI archives: FILE (rte)
#                   and FILE.kubelet-state (e.g. for `skopeo copy --all oci-archive:FILE
#                   docker://registry/rte:TAG`)
# Needs root (or user namespaces for mmdebstrap and buildah) and:
#   apt-get install -y buildah mmdebstrap golang-go qemu-user-static binfmt-support
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-python3}"
output=""
arches="amd64,arm64"
while (($#)); do
  case "$1" in
    --output) output="$(realpath -m "$2")"; shift 2 ;;
    --arch) arches="$2"; shift 2 ;;
    *) echo "build-image: unknown argument $1 (usage: hack/build-image.sh [--arch LIST] [--output FILE])" >&2; exit 2 ;;
  esac
done

# Usage errors first (exit 2), whatever tools this machine has.
IFS=, read -r -a arch_list <<<"$arches"
declare -A qemu=([arm64]=aarch64 [amd64]=x86_64)
declare -A wheel_arch=([arm64]=aarch64 [amd64]=x86_64)
for arch in "${arch_list[@]}"; do
  if [[ -z "${qemu[$arch]:-}" ]]; then
    echo "build-image: unsupported architecture $arch (amd64, arm64)" >&2
    exit 2
  fi
done

for tool in buildah mmdebstrap go; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-image: $tool is missing; install it with: apt-get install -y buildah mmdebstrap golang-go" >&2
    exit 1
  fi
done

native="$(go env GOHOSTARCH)"
for arch in "${arch_list[@]}"; do
  if [[ "$arch" != "$native" && ! -e "/proc/sys/fs/binfmt_misc/qemu-${qemu[$arch]}" ]]; then
    # Registered by binfmt-support but possibly disabled, or binfmt_misc not mounted yet.
    if [[ ! -e /proc/sys/fs/binfmt_misc/status ]]; then
      mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
    fi
    update-binfmts --enable "qemu-${qemu[$arch]}" >/dev/null 2>&1 || true
    if [[ ! -e "/proc/sys/fs/binfmt_misc/qemu-${qemu[$arch]}" ]]; then
      echo "build-image: cannot run $arch programs here; install qemu-user-static and binfmt-support" \
        "and run: update-binfmts --enable qemu-${qemu[$arch]}" >&2
      exit 1
    fi
  fi
done

version="$("$python" -c 'import tomllib,sys; print(tomllib.load(open(sys.argv[1],"rb"))["project"]["version"])' "$repo/pyproject.toml")"
image="localhost/rte:$version"
copier_image="localhost/rte:$version-kubelet-state"
suite=bookworm
packages=python3,libudev1,libstdc++6
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rte-image"
fixture=tests/fixtures/sysfs/arm-kunpeng920-2s-4numa-128c/sys

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

# rte's own wheel once (pure Python, the same for every architecture).
step "pip wheel rte"
mkdir -p "$work/rte-wheel"
"$python" -m pip wheel -qq --disable-pip-version-check --no-deps --wheel-dir "$work/rte-wheel" "$repo"
rte_wheel="$(ls "$work"/rte-wheel/rte-*.whl)"

build_arch() {
  local arch=$1
  local base_tar="$cache/$suite-$arch-${packages//,/-}.tar"
  local context="$work/context-$arch"

  # 1. The base: Debian's python3 and libudev1, nothing else (no apt, no docs); cached tarball.
  if [[ ! -s "$base_tar" ]]; then
    step "$arch: mmdebstrap $suite with $packages (cached in $cache)"
    mkdir -p "$cache"
    # The other architecture runs under the qemu binfmt entry checked above (mmdebstrap's own
    # check of it would need Debian's arch-test).
    local skip=()
    [[ "$arch" == "$native" ]] || skip=(--skip=check/qemu)
    mmdebstrap --quiet --arch="$arch" --variant=essential --include="$packages" "${skip[@]}" \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/info/*' \
      --format=tar "$suite" "$base_tar.partial"
    mv "$base_tar.partial" "$base_tar"
  else
    step "$arch: base tarball from the cache: $base_tar"
  fi
  local base_ctr
  base_ctr="$(buildah "${storage[@]}" from --arch "$arch" scratch)"
  containers+=("$base_ctr")
  buildah "${storage[@]}" add --quiet "$base_ctr" "$base_tar" / >/dev/null
  buildah "${storage[@]}" config --arch "$arch" --os linux --env LANG=C.UTF-8 --cmd python3 "$base_ctr"
  buildah "${storage[@]}" commit --quiet --rm "$base_ctr" "localhost/rte-base:$suite-$arch" >/dev/null

  # 2. The wheels: rte's, its dependencies' and pip's, for Python 3.11 on Linux/$arch.
  mkdir -p "$context/wheels"
  cp "$rte_wheel" "$context/wheels/"
  cp "$repo/hack/compile_imported.py" "$context/"
  if [[ "$arch" == "$native" ]]; then
    step "$arch: pip wheel (dependencies)"
    "$python" -m pip wheel -qq --disable-pip-version-check --wheel-dir "$context/wheels" "$rte_wheel" pip
  else
    # Every manylinux level bookworm's glibc (2.36) runs; pip does not expand a custom
    # --platform to the older levels itself.
    local platforms=() level
    for level in 2014 _2_28 _2_31 _2_34 _2_35 _2_36; do
      platforms+=(--platform "manylinux${level}_${wheel_arch[$arch]}")
    done
    step "$arch: pip download --platform manylinux*_${wheel_arch[$arch]} (dependencies)"
    "$python" -m pip download -q --disable-pip-version-check --only-binary=:all: \
      "${platforms[@]}" --python-version 3.11 --implementation cp --abi cp311 \
      --dest "$context/wheels" "$rte_wheel" pip
  fi

  # 3. The image, exactly as deploy/Containerfile says, offline.
  step "$arch: buildah bud $image-$arch"
  buildah "${storage[@]}" bud --quiet --isolation chroot --pull=never --layers=false --arch "$arch" \
    --build-arg BASE_IMAGE="localhost/rte-base:$suite-$arch" --build-arg PIP_OFFLINE=1 \
    -f "$repo/deploy/Containerfile" -t "$image-$arch" "$context" >/dev/null

  # 4. Run it: rte dump against a fixture machine (and, natively, this one).
  local ctr
  ctr="$(buildah "${storage[@]}" from --pull-never "$image-$arch")"
  containers+=("$ctr")
  in_image() {
    buildah "${storage[@]}" run --isolation chroot --user 65532:65532 \
      --mount "type=bind,source=$repo/$fixture,destination=/fixture/sys,ro" \
      --mount "type=bind,source=$repo/hack/check_bytecode.py,destination=/check_bytecode.py,ro" \
      --mount type=bind,source=/sys,destination=/sys,ro "$ctr" -- "$@"
  }
  step "$arch: in the image: rte dump --sysfs (fixture ${fixture#tests/fixtures/sysfs/})"
  in_image python3 -c 'import platform; print("machine:", platform.machine())'
  in_image rte dump --sysfs /fixture/sys
  # Only the imported modules' bytecode is compiled (hack/compile_imported.py): none that the
  # dump, the agent or the extender imports may lack its .pyc (PYTHONDONTWRITEBYTECODE is set,
  # and as 65532 nothing under /opt/rte or /usr is writable, as on the read-only root).
  step "$arch: in the image: every imported module has its .pyc (hack/check_bytecode.py)"
  in_image python3 /check_bytecode.py dump --sysfs /fixture/sys -o json
  if [[ "$arch" == "$native" ]]; then
    step "$arch: in the image: rte dump (this machine's /sys, read-only)"
    in_image rte dump
    step "$arch: in the image: PCI devices through udev, grpc"
    in_image python3 -c '
import grpc
from rte.host.pci import read_pci_devices
devices = read_pci_devices("/sys", use_udev=True)
print(len(devices), "PCI devices via pyudev/libudev; grpc", grpc.__version__)
'
    step "$arch: in the image: /sys is mounted read-only"
    in_image python3 -c 'import os, sys; sys.exit(0 if os.statvfs("/sys").f_flag & os.ST_RDONLY else "/sys is writable")'
  else
    step "$arch: in the image: grpc's native module loads"
    in_image python3 -c 'import grpc; print("grpc", grpc.__version__)'
  fi

  # 5. The kubelet-state container's image: the static copier alone, FROM scratch (no shell).
  step "$arch: go build + buildah bud $copier_image-$arch"
  mkdir -p "$work/copier-$arch"
  (cd "$repo/deploy/kubelet-state-copier" \
    && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOTOOLCHAIN=local \
      go build -trimpath -ldflags=-s -o "$work/copier-$arch/kubelet-state-copier" .)
  buildah "${storage[@]}" bud --quiet --isolation chroot --pull=never --layers=false --arch "$arch" \
    -f "$repo/deploy/kubelet-state-copier/Containerfile" -t "$copier_image-$arch" "$work/copier-$arch" >/dev/null
  local copier_ctr listing
  copier_ctr="$(buildah "${storage[@]}" from --pull-never "$copier_image-$arch")"
  containers+=("$copier_ctr")
  step "$arch: in $copier_image-$arch: the copier and nothing else"
  listing="$(cd "$(buildah "${storage[@]}" mount "$copier_ctr")" && find . -mindepth 1 | sort | tr '\n' ' ')"
  if [[ "$listing" != "./kubelet-state-copier " ]]; then
    echo "build-image: $copier_image-$arch holds more than the copier: $listing" >&2
    exit 1
  fi
  if buildah "${storage[@]}" run --isolation chroot "$copier_ctr" -- /bin/sh -c true 2>/dev/null; then
    echo "build-image: $copier_image-$arch has a shell" >&2
    exit 1
  fi
  # It runs (under emulation too): with an argument it refuses, status 2, and says why.
  local said
  said="$(buildah "${storage[@]}" run --isolation chroot "$copier_ctr" -- /kubelet-state-copier --help 2>&1 || true)"
  if [[ "$said" != *"kubelet-state-copier: takes no arguments"* ]]; then
    echo "build-image: the $arch copier did not run as expected: $said" >&2
    exit 1
  fi
  echo "the $arch copier runs and refuses arguments"
}

for arch in "${arch_list[@]}"; do
  build_arch "$arch"
done

# 6. The manifest lists: one reference for every architecture.
step "manifest lists $image and $copier_image"
for name in "$image" "$copier_image"; do
  buildah "${storage[@]}" manifest create "$name" >/dev/null
  for arch in "${arch_list[@]}"; do
    buildah "${storage[@]}" manifest add --arch "$arch" --os linux "$name" "containers-storage:$name-$arch" >/dev/null
  done
  platforms="$(buildah "${storage[@]}" manifest inspect "$name" \
    | "$python" -c 'import json,sys; print(" ".join(sorted(m["platform"]["architecture"] for m in json.load(sys.stdin)["manifests"])))')"
  echo "== $name: manifest list of $platforms"
done

for arch in "${arch_list[@]}"; do
  size="$(buildah "${storage[@]}" images --format '{{.Size}}' "$image-$arch")"
  echo "== $image-$arch: $size (base localhost/rte-base:$suite-$arch from mmdebstrap)"
done
echo "== built and checked in $((SECONDS - start))s"
if [[ -n "$output" ]]; then
  buildah "${storage[@]}" manifest push --quiet --all "$image" "oci-archive:$output:$image"
  buildah "${storage[@]}" manifest push --quiet --all "$copier_image" "oci-archive:$output.kubelet-state:$copier_image"
  step "wrote $output and $output.kubelet-state"
fi
