#!/usr/bin/env bash
# Installs what the opt-in Docker Engine test tier (`npm run test:docker-engine`)
# needs: Debian's Docker Engine (docker.io: dockerd and its CLI) with its
# containerd, runc and tini, busybox-static (the root filesystem of the
# images imported offline) and docker-registry with apache2-utils (the registry
# behind basic auth of the imagePullSecrets test). Nothing is started and no daemon configuration is
# written here (the remote-engine test talks to that dockerd's own TLS
# endpoint, no stunnel): lib/local/dockerd.ts starts one dockerd per test run with
# every path and option on its command line, and stops it. On these machines
# the package's init script does not run at install (policy-rc.d denies it,
# and there is no systemd); where an init does start it, that system dockerd
# (with its default bridge and iptables rules) is not what the tests use.
set -euo pipefail

PACKAGES=(docker.io containerd runc tini iptables busybox-static docker-registry apache2-utils)

log() { printf '[ensure-docker-engine] %s\n' "$*" >&2; }

# shellcheck source=debian-packages.sh
source "$(dirname "$0")/debian-packages.sh"
ensure_debian_packages ensure-docker-engine "${PACKAGES[@]}"
log "dockerd $(/usr/sbin/dockerd --version | awk '{print $3}' | tr -d ,), containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}')"
