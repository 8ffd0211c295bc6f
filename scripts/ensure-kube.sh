#!/usr/bin/env bash
# Installs what the local control plane needs and builds kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl v1.20.2 from Debian
# bookworm's `kubernetes` source package. Binaries are cached outside the
# repository and reused; only missing ones are built. kubectl is built from the
# same source so that tests drive the API server with its own client version
# (the kubelet API tests run `kubectl logs` and `kubectl get --raw`).
set -euo pipefail

CACHE_DIR="${SVK_CACHE_DIR:-$HOME/.cache/serverless-virtual-kubelet}"
KUBE_DIR="$CACHE_DIR/kube-v1.20.2"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

log() { printf '[ensure-kube] %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Another apt may hold the lock (a parallel setup, an unattended upgrade): wait for it rather than fail.
APT_WAIT="-o DPkg::Lock::Timeout=300"
apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then as_root apt-get $APT_WAIT update -qq; apt_updated=1; fi
  log "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get $APT_WAIT install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Runtime tools: etcd for the API server, Java for DynamoDB Local, openssl for keys, iproute2 for
# the local kubelet API's route to a joined cluster's API server and the tests' network namespaces.
apt_install etcd-server openjdk-17-jre-headless openssl ca-certificates iproute2

need_build=()
for b in "${BINARIES[@]}"; do [ -x "$KUBE_DIR/$b" ] || need_build+=("$b"); done
if [ ${#need_build[@]} -eq 0 ]; then
  log "control-plane binaries and kubectl cached in $KUBE_DIR"
  exit 0
fi

# Two checkouts setting up at once (worktrees, a CI clone beside a session) build once: the second waits
# for the first and finds the binaries.
mkdir -p "$CACHE_DIR"
exec 9>"$CACHE_DIR/.build.lock"
flock 9
need_build=()
for b in "${BINARIES[@]}"; do [ -x "$KUBE_DIR/$b" ] || need_build+=("$b"); done
if [ ${#need_build[@]} -eq 0 ]; then
  log "control-plane binaries and kubectl cached in $KUBE_DIR (built meanwhile by another setup)"
  exit 0
fi

log "building ${need_build[*]} (first run only; several minutes on 2 cores)"
SRC_LIST=/etc/apt/sources.list.d/svk-deb-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  as_root tee "$SRC_LIST" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt_updated=0
fi
apt_install golang-go rsync jq dpkg-dev make
if [ $apt_updated = 0 ]; then as_root apt-get $APT_WAIT update -qq; apt_updated=1; fi

SRC_DIR="$CACHE_DIR/src"
mkdir -p "$SRC_DIR" "$KUBE_DIR"
tree=$(find "$SRC_DIR" -maxdepth 1 -type d -name 'kubernetes-1.20*' | head -n 1)
if [ -z "$tree" ]; then
  (cd "$SRC_DIR" && apt-get source --download-only kubernetes >/dev/null 2>&1 && dpkg-source -x --skip-patches ./kubernetes_*.dsc >/dev/null 2>&1 || dpkg-source -x ./kubernetes_*.dsc >/dev/null)
  tree=$(find "$SRC_DIR" -maxdepth 1 -type d -name 'kubernetes-1.20*' | head -n 1)
fi
[ -n "$tree" ] || { log "could not unpack the kubernetes source package"; exit 1; }

for b in "${need_build[@]}"; do
  start=$(date +%s)
  log "make WHAT=cmd/$b"
  (cd "$tree" && GOPROXY=off GOFLAGS=-mod=vendor GO111MODULE=on KUBE_GIT_VERSION=v1.20.2 \
      make WHAT="cmd/$b" >"$CACHE_DIR/build-$b.log" 2>&1) || { log "build of $b failed, see $CACHE_DIR/build-$b.log"; tail -n 30 "$CACHE_DIR/build-$b.log" >&2; exit 1; }
  out=$(find "$tree/_output" -type f -name "$b" -perm -u+x | head -n 1)
  install -m 0755 "$out" "$KUBE_DIR/$b"
  log "built $b in $(( $(date +%s) - start ))s"
done
log "control-plane binaries and kubectl ready in $KUBE_DIR"
