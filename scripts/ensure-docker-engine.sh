#!/usr/bin/env bash
# Installs what the opt-in Docker Engine test tier (`npm run test:docker-engine`)
# needs: Debian's Docker Engine (docker.io: dockerd and its CLI) with its
# containerd, runc and tini, busybox-static (the root filesystem of the
# images imported offline), stunnel4 (the TLS terminator of the
# remote-engine test) and docker-registry with apache2-utils (the registry
# behind basic auth of the imagePullSecrets test). Nothing is started and no daemon configuration is
# written here: lib/local/dockerd.ts starts one dockerd per test run with
# every path and option on its command line, and stops it. On these machines
# the package's init script does not run at install (policy-rc.d denies it,
# and there is no systemd); where an init does start it, that system dockerd
# (with its default bridge and iptables rules) is not what the tests use.
set -euo pipefail

PACKAGES=(docker.io containerd runc tini iptables busybox-static stunnel4 docker-registry apache2-utils)

log() { printf '[ensure-docker-engine] %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Another apt may hold the lock (a parallel setup): wait for it rather than fail.
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get -o DPkg::Lock::Timeout=300 update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi
log "dockerd $(/usr/sbin/dockerd --version | awk '{print $3}' | tr -d ,), containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}')"
