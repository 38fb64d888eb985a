#!/bin/sh
# Build the engine's image from the Dockerfile and run `skills worker --help` in it (`make image`).
#
# The builder is docker when its daemon answers, else buildah, else podman. Environment:
#   IMAGE         the tag to build (default skills-engine:dev)
#   PYTHON_IMAGE  the base image (default: the Dockerfile's python:3.11-slim-bookworm); on a machine
#                 that cannot pull it, scripts/debian-python-base.sh builds an equivalent one
#   PIP_CA        a CA bundle for pip behind a TLS-inspecting proxy (default: pip's own `cert`
#                 setting, if any); passed as a build secret, never stored in the image
# buildah runs with the vfs storage driver and chroot isolation unless STORAGE_DRIVER and
# BUILDAH_ISOLATION say otherwise: that works as root inside a container, where overlay mounts and
# namespaces often do not.
set -eu
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-skills-engine:dev}
PIP_CA=${PIP_CA:-$(.venv/bin/pip config get global.cert 2>/dev/null || true)}

set --
[ -n "${PYTHON_IMAGE:-}" ] && set -- "$@" --build-arg "PYTHON_IMAGE=$PYTHON_IMAGE"
[ -n "$PIP_CA" ] && set -- "$@" --secret "id=pip_ca,src=$PIP_CA"

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    DOCKER_BUILDKIT=1 docker build "$@" -t "$IMAGE" .
    run() { docker run --rm "$IMAGE" "$@"; }
elif command -v buildah >/dev/null 2>&1; then
    buildah() { command buildah --storage-driver "${STORAGE_DRIVER:-vfs}" "$@"; }
    buildah bud --isolation "${BUILDAH_ISOLATION:-chroot}" "$@" -t "$IMAGE" .
    run() {
        container=$(buildah from "$IMAGE")
        status=0
        buildah run --isolation "${BUILDAH_ISOLATION:-chroot}" "$container" -- skills "$@" || status=$?
        buildah rm "$container" >/dev/null
        return $status
    }
elif command -v podman >/dev/null 2>&1; then
    podman build "$@" -t "$IMAGE" .
    run() { podman run --rm "$IMAGE" "$@"; }
else
    echo "no image builder: install docker, buildah or podman (Debian: apt-get install buildah)" >&2
    exit 1
fi

run worker --help
run setup --help >/dev/null
run telegram --help >/dev/null
echo "built $IMAGE: skills worker, setup and telegram run in it"
