#!/usr/bin/env bash
# Build the engine's image from the Dockerfile and try it (`make image`):
#   1. `skills worker --help`, `skills setup --help`, `skills telegram --help` run in it;
#   2. against a throwaway dev server on loopback (the venv's `temporal`), the image's own
#      `skills setup` adds the search attributes, its `skills worker` starts, a skill registered
#      with its CLI runs and writes to the outbox, and SIGTERM drains the worker (exit status 0).
#
# The builder is docker when its daemon answers, else buildah, else podman. Environment:
#   IMAGE         the tag to build (default skills-engine:dev)
#   PYTHON_IMAGE  the base image (default: the Dockerfile's python:3.11-slim-bookworm); on a machine
#                 that cannot pull it, scripts/debian-python-base.sh builds an equivalent one
#   PIP_CA        a CA bundle for pip behind a TLS-inspecting proxy (default: PIP_CERT, else pip's
#                 own `cert` setting, if any); passed as a build secret, never stored in the image
#   SMOKE=0       skip step 2
# buildah runs with the vfs storage driver and chroot isolation unless STORAGE_DRIVER and
# BUILDAH_ISOLATION say otherwise: that works as root inside a container, where overlay mounts and
# namespaces often do not.
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-skills-engine:dev}
PIP_CA=${PIP_CA:-${PIP_CERT:-$(.venv/bin/pip config list 2>/dev/null | sed -n "s/^global\.cert='\(.*\)'\$/\1/p")}}

build_args=()
[ -n "${PYTHON_IMAGE:-}" ] && build_args+=(--build-arg "PYTHON_IMAGE=$PYTHON_IMAGE")
[ -n "$PIP_CA" ] && build_args+=(--secret "id=pip_ca,src=$PIP_CA")

# in_image VAR=value... -- program args...: run a program in the image, on the host's network.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    DOCKER_BUILDKIT=1 docker build "${build_args[@]}" -t "$IMAGE" .
    in_image() {
        local env=(); while [ "$1" != -- ]; do env+=(-e "$1"); shift; done; shift
        docker run --rm --network host "${env[@]}" --entrypoint "$1" "$IMAGE" "${@:2}"
    }
elif command -v buildah >/dev/null 2>&1; then
    buildah() { command buildah --storage-driver "${STORAGE_DRIVER:-vfs}" "$@"; }
    isolation=${BUILDAH_ISOLATION:-chroot}
    buildah bud --isolation "$isolation" "${build_args[@]}" -t "$IMAGE" .
    in_image() {
        local env=(); while [ "$1" != -- ]; do env+=(--env "$1"); shift; done; shift
        local container status=0
        container=$(buildah from "$IMAGE")
        buildah run --isolation "$isolation" "${env[@]}" "$container" -- "$@" || status=$?
        buildah rm "$container" >/dev/null
        return $status
    }
elif command -v podman >/dev/null 2>&1; then
    podman build "${build_args[@]}" -t "$IMAGE" .
    in_image() {
        local env=(); while [ "$1" != -- ]; do env+=(-e "$1"); shift; done; shift
        podman run --rm --network host "${env[@]}" --entrypoint "$1" "$IMAGE" "${@:2}"
    }
else
    echo "no image builder: install docker, buildah or podman (Debian: apt-get install buildah)" >&2
    exit 1
fi

in_image -- sh -c 'skills worker --help && skills setup --help >/dev/null && skills telegram --help >/dev/null'
echo "built $IMAGE: skills worker, setup and telegram run in it"
[ "${SMOKE:-1}" = 0 ] && exit 0

port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/temporal server start-dev --headless --ip 127.0.0.1 --port "$port" --ui-port 0 --log-level error \
    --dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=true >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    .venv/bin/temporal operator cluster health --address "127.0.0.1:$port" >/dev/null 2>&1 && break
    sleep 0.5
done

# The namespace starts without the engine's search attributes: the image's `skills setup` adds them.
in_image "TEMPORAL_ADDRESS=127.0.0.1:$port" SKILLS_TASK_QUEUE=smoke SKILLS_LOG_FORMAT=text -- sh -ec '
    skills setup
    skills worker & worker=$!
    i=0; until skills list >/dev/null 2>&1; do i=$((i+1)); [ $i -lt 120 ]; sleep 0.5; done
    echo "{\"name\": \"smoke\", \"instructions\": \"say hello\", \"execution_plan\":
           [{\"toolName\": \"outbox_send_message\", \"parameters\": {\"message\": \"hello from the image\"}}]}" \
        | skills register -
    skills run smoke
    skills outbox | grep "hello from the image"
    kill -TERM $worker; wait $worker
    echo "the worker drained and exited with status $?"'
echo "$IMAGE works: setup, a worker, a skill registered and run, a clean stop"
