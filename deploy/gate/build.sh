#!/usr/bin/env bash
# Builds the gate image without a Docker daemon, as root: mmdebstrap makes a Debian bookworm
# base (python3, python3-venv, CA certificates) from the machine's apt sources, pip gathers the
# pinned wheels for that base (CPython 3.11, glibc 2.36, x86-64) and tasgen's own wheel, and
# buildah (vfs storage, chroot isolation) builds deploy/gate/Dockerfile from them. The base is
# built once and kept in buildah's storage.
#   deploy/gate/build.sh [TAG]      (default localhost/tasgen-gate:dev)
#   PYTHON=python3.11               (the pip that gathers the wheels; default python3)
set -euo pipefail
cd "$(dirname "$0")/../.."
TAG=${1:-localhost/tasgen-gate:dev}
BASE=localhost/tasgen-gate-base:bookworm
export STORAGE_DRIVER=${STORAGE_DRIVER:-vfs} BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "build.sh needs $tool (apt-get install buildah mmdebstrap)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$work/base.tar"
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$work/base.tar" /
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  buildah commit --quiet "$ctr" "$BASE" >/dev/null
  buildah rm "$ctr" >/dev/null
fi

mkdir "$work/wheels"
# Every manylinux tag that the base's glibc 2.36 runs (pip does not infer older ones).
platforms=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64)
for minor in $(seq 17 36); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
${PYTHON:-python3} -m pip download --quiet --no-deps --only-binary=:all: --dest "$work/wheels" \
  --python-version 3.11 --implementation cp --abi cp311 "${platforms[@]}" \
  -r deploy/gate/requirements.txt
${PYTHON:-python3} -m pip wheel --quiet --no-deps --wheel-dir "$work/wheels" .
cp deploy/gate/requirements.txt "$work/wheels/"
buildah bud --layers=false -f deploy/gate/Dockerfile --build-arg "BASE=$BASE" \
  -t "$TAG" "$work/wheels" >"$work/bud.log" 2>&1 || { cat "$work/bud.log" >&2; exit 1; }
echo "$TAG"
