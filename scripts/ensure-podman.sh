#!/usr/bin/env bash
# Installs what the Docker provider's tests need to run real containers:
# Podman from Debian (serving the Docker Engine API on a unix socket), runc
# (crun, podman's default, cannot run containers on these machines), the
# Debian podman's recommended init and network backend (catatonit for
# HostConfig.Init, netavark and iptables for bridge networks), busybox-static
# (the root filesystem of the images imported offline), stunnel4 (the TLS
# terminator in front of the Podman socket for the remote-engine test), and
# docker-registry (the CNCF distribution registry) with apache2-utils (its
# htpasswd) for the imagePullSecrets test's registry behind basic auth.
# Nothing is started here: lib/local/podman.ts and lib/local/registry.ts
# start and stop their own per test run (the registry package's system
# service, on port 5000, is not used).
set -euo pipefail

PACKAGES=(podman runc catatonit netavark iptables busybox-static stunnel4 docker-registry apache2-utils)

log() { printf '[ensure-podman] %s\n' "$*" >&2; }

# shellcheck source=debian-packages.sh
source "$(dirname "$0")/debian-packages.sh"
ensure_debian_packages ensure-podman "${PACKAGES[@]}"
log "podman $(podman --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}'), docker-registry $(docker-registry --version | awk '{print $3}')"
