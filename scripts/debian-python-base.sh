#!/bin/sh
# A stand-in for python:3.11-slim-bookworm on a machine that cannot pull from Docker Hub but can
# reach a Debian mirror: Debian 12's own Python 3.11 (debootstrap, minbase), imported as the local
# image localhost/python:3.11-slim-bookworm. Then:
#   PYTHON_IMAGE=localhost/python:3.11-slim-bookworm make image
# Needs root, debootstrap and buildah or podman (Debian: apt-get install debootstrap buildah).
set -eu
MIRROR=${MIRROR:-http://deb.debian.org/debian}
TAG=${TAG:-localhost/python:3.11-slim-bookworm}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3.11,python3.11-venv,ca-certificates,tzdata bookworm "$root" "$MIRROR"
ln -sf python3.11 "$root/usr/bin/python3"    # python3 as in the official image (no python3 package pulled in)
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
driver=${STORAGE_DRIVER:-vfs}
buildah() { command buildah --storage-driver "$driver" "$@"; }
if command -v podman >/dev/null 2>&1; then
    tar -C "$root" -c . | podman --storage-driver "$driver" import --change 'CMD ["python3"]' - "$TAG"
else
    container=$(buildah from scratch)
    buildah copy "$container" "$root" /
    buildah config --cmd python3 "$container"
    buildah commit "$container" "$TAG"
    buildah rm "$container"
fi
echo "built $TAG"
