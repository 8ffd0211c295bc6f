#!/usr/bin/env bash
# Builds what the Kubernetes node conformance tier (`npm run test:k8s-conformance`)
# runs, from the same Debian `kubernetes` 1.20.2 source tree that
# scripts/ensure-kube.sh unpacks and builds the control plane from, the same
# way (`make WHAT=...`, vendored modules, GOPROXY=off), into the same cache
# directory beside kube-apiserver and kubectl:
#   e2e.test   the e2e suite whose [NodeConformance] specs the tier runs
#   ginkgo     its runner, for parallel nodes
#   agnhost    the e2e test image's multi-purpose binary (static, for an image without libc)
#   nonewprivs the nonewprivs test image's binary (static)
#   pause      build/pause/linux/pause.c, compiled static with gcc
# Only missing ones are built (the first build is measured and logged); the
# second of two setups running at once waits for the first and finds them.
# Runs scripts/ensure-kube.sh first (the source tree, the Go toolchain, kubectl).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE_DIR="${SVK_CACHE_DIR:-$HOME/.cache/serverless-virtual-kubelet}"
KUBE_DIR="$CACHE_DIR/kube-v1.20.2"
# name:make-target (empty target: not built by make).
TARGETS=(
  e2e.test:test/e2e/e2e.test
  ginkgo:vendor/github.com/onsi/ginkgo/ginkgo
  agnhost:test/images/agnhost
  nonewprivs:test/images/nonewprivs
  pause:
)

log() { printf '[ensure-k8s-conformance] %s\n' "$*" >&2; }

bash scripts/ensure-kube.sh
# shellcheck source=debian-packages.sh
source scripts/debian-packages.sh
# gcc and libc6-dev compile the static pause; curl goes into the agnhost image (its Dockerfile installs it).
ensure_debian_packages ensure-k8s-conformance gcc libc6-dev curl busybox-static

missing() {
  local out=() t
  for t in "${TARGETS[@]}"; do [ -x "$KUBE_DIR/${t%%:*}" ] || out+=("$t"); done
  echo "${out[@]:-}"
}

read -ra need <<<"$(missing)"
if [ ${#need[@]} -eq 0 ]; then
  log "e2e.test, ginkgo, agnhost, nonewprivs and pause cached in $KUBE_DIR"
  exit 0
fi

exec 9>"$CACHE_DIR/.build.lock"
flock 9
read -ra need <<<"$(missing)"
if [ ${#need[@]} -eq 0 ]; then
  log "e2e.test, ginkgo, agnhost, nonewprivs and pause cached in $KUBE_DIR (built meanwhile by another setup)"
  exit 0
fi

tree=$(find "$CACHE_DIR/src" -maxdepth 1 -type d -name 'kubernetes-1.20*' | head -n 1)
[ -n "$tree" ] || { log "no kubernetes source tree under $CACHE_DIR/src: scripts/ensure-kube.sh unpacks it"; exit 1; }

log "building ${need[*]%%:*} (first run only)"
for t in "${need[@]}"; do
  name=${t%%:*} target=${t#*:}
  start=$(date +%s)
  if [ -n "$target" ]; then
    log "make WHAT=$target"
    # The test images run these on a root filesystem without libc: link them statically.
    (cd "$tree" && GOPROXY=off GOFLAGS=-mod=vendor GO111MODULE=on KUBE_GIT_VERSION=v1.20.2 \
        KUBE_STATIC_OVERRIDES="agnhost nonewprivs" make WHAT="$target" >"$CACHE_DIR/build-$name.log" 2>&1) ||
      { log "build of $name failed, see $CACHE_DIR/build-$name.log"; tail -n 30 "$CACHE_DIR/build-$name.log" >&2; exit 1; }
    out=$(find "$tree/_output" -type f -name "$name" -perm -u+x | head -n 1)
  else
    log "gcc -static build/pause/linux/pause.c"
    out="$CACHE_DIR/pause.build"
    gcc -Os -Wall -Werror -static -DVERSION=v3.2 -o "$out" "$tree/build/pause/linux/pause.c" \
      >"$CACHE_DIR/build-$name.log" 2>&1 ||
      { log "build of pause failed, see $CACHE_DIR/build-$name.log"; cat "$CACHE_DIR/build-$name.log" >&2; exit 1; }
  fi
  [ -n "$out" ] || { log "make WHAT=$target produced no $name"; exit 1; }
  install -m 0755 "$out" "$KUBE_DIR/$name"
  log "built $name in $(($(date +%s) - start))s"
done
log "node conformance binaries ready in $KUBE_DIR"
