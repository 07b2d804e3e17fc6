#!/usr/bin/env bash
# Build a Debian bookworm base image with Python 3.11 from Debian's own packages, for machines
# that reach Debian's package mirror but no container registry. The Dockerfile's default base
# (python:3.11-slim-bookworm) is swapped for it with --build-arg BASE_IMAGE=<this image>.
#
# Usage: tests/container/base-image.sh [IMAGE]   (default localhost/youyou-base:bookworm)
# An image already there is kept (delete it with `podman rmi` to rebuild). The mirror is the
# one this machine's apt uses; CA certificates added to this machine (in
# /usr/local/share/ca-certificates) are trusted inside the image too, so pip in the build
# reaches the package index the way the host does.
set -euo pipefail

image="${1:-localhost/youyou-base:bookworm}"
podman=(podman --storage-driver=vfs --runtime=runc --cgroup-manager=cgroupfs)

if "${podman[@]}" image exists "$image"; then
    echo "base image $image exists: reused"
    exit 0
fi

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
fi
if [ -z "$mirror" ]; then
    mirror="$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
fi
if [ -z "$mirror" ]; then
    echo "no Debian mirror found in apt's sources: set DEBIAN_MIRROR" >&2
    exit 1
fi

rootfs="$(mktemp -d /var/tmp/youyou-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
chmod 0755 "$rootfs"  # the image's / : mktemp made it 0700, which locks out non-root users
echo "debootstrap bookworm from $mirror into $rootfs"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
    tail -n 30 "$rootfs.log" >&2
    exit 1
}
rm -f "$rootfs.log"

shopt -s nullglob
extra=(/usr/local/share/ca-certificates/*.crt)
if [ "${#extra[@]}" -gt 0 ]; then
    cp "${extra[@]}" "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
fi
# Smaller: no package lists, caches or documentation are needed to run Python.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

tar -C "$rootfs" -c . | "${podman[@]}" import \
    --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' - "$image" >/dev/null
echo "base image $image built"
