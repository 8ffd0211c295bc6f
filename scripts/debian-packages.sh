#!/usr/bin/env bash
# Sourced by the ensure-*.sh scripts: installs the Debian packages among the
# arguments that are not installed yet, waiting for apt's lock (a parallel
# setup may hold it) rather than failing. Uses sudo when not root.

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ensure_debian_packages LOG_TAG PACKAGE...
ensure_debian_packages() {
  local tag=$1
  shift
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  printf '[%s] installing Debian packages: %s\n' "$tag" "${missing[*]}" >&2
  as_root apt-get -o DPkg::Lock::Timeout=300 update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}
