#!/usr/bin/env bash
# The Kubernetes node conformance tier (`npm run test:k8s-conformance`):
# Kubernetes' own [NodeConformance] specs (e2e.test v1.20.2) against one
# virtual node with the docker provider on Podman. Installs and builds what is
# missing (the control plane, Podman, e2e.test, ginkgo and the test images'
# binaries: scripts/ensure-k8s-conformance.sh), then runs
# test/k8s-conformance/run.ts with the arguments given, e.g.
#   npm run test:k8s-conformance                      # all 143 specs
#   npm run test:k8s-conformance -- ConfigMap         # the specs whose text matches
#   npm run test:k8s-conformance -- --subset          # the CI subset (npm test runs it)
#   npm run test:k8s-conformance -- --list Probe      # what a focus selects, without running
# See docs/k8s-conformance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

bash scripts/ensure-podman.sh
bash scripts/ensure-k8s-conformance.sh
tsx test/k8s-conformance/run.ts "$@"
