#!/usr/bin/env bash
# The opt-in Docker Engine tier (`npm run test:docker-engine`): the Docker
# provider's conformance suite and its integration tests against Debian's
# Docker Engine instead of Podman. It installs what is missing (the control
# plane's binaries, docker.io), and test/run-integration.ts starts one dockerd
# for the run (lib/local/dockerd.ts: its data root, exec root and socket under
# the run's .local/ directory), stops it and removes what it created.
# Arguments replace the default test files; those starting with `--` go to
# `node --test` (e.g. --test-name-pattern=graceful test/conformance/docker.test.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

bash scripts/ensure-kube.sh
bash scripts/ensure-docker-engine.sh

files=0
for arg in "$@"; do case "$arg" in --*) ;; *) files=1 ;; esac; done
if [ $files = 0 ]; then
  set -- "$@" test/conformance/docker.test.ts 'test/integration/docker-*.test.ts' \
    test/integration/kubelet-api-docker.test.ts test/integration/start-docker.test.ts
fi
SVK_TEST_ENGINE=dockerd tsx test/run-integration.ts "$@"
