#!/usr/bin/env bash
# Idempotent set-up for the container live tests (tests/live/test_containers_live.py):
# podman with the runc runtime, and unshare/nsenter. The tests hand podman
# tests/live/containers.conf through CONTAINERS_CONF. Called by
# scripts/setup.sh; needs root for apt.
#
# These machines refuse crun and podman's default ulimits (RLIMIT_NOFILE
# raised above the hard limit), hence runc and `default_ulimits = []`. No
# image registry is reachable: the tests run `podman run --rootfs DIR` with
# a root filesystem built from this machine's own files.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v podman >/dev/null 2>&1 || need_apt+=(podman)
command -v runc >/dev/null 2>&1 || need_apt+=(runc)
command -v unshare >/dev/null 2>&1 || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup-containers: installing ${need_apt[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
echo "setup-containers: ok (podman $(podman --version | awk '{print $3}'), runc)" >&2
