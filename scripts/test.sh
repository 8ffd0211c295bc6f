#!/usr/bin/env bash
# Runs every check from a fresh clone: installs what is missing (npm packages,
# Debian packages, the control-plane binaries, Podman), then typecheck, lint, unit
# tests, integration tests against a real control plane and DynamoDB Local, and
# a subset of Kubernetes' own node conformance specs (docs/k8s-conformance.md).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "npm dependencies"
if [ ! -x node_modules/.bin/tsx ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  echo "node_modules up to date"
fi
# The `node` devDependency puts Node 22 (Lambda's nodejs22.x) first.
export PATH="$PWD/node_modules/.bin:$PATH"
echo "node $(node --version)"

step "control plane and DynamoDB Local prerequisites"
bash scripts/ensure-kube.sh

step "Podman prerequisites (real containers for the Docker provider)"
bash scripts/ensure-podman.sh

# The node conformance subset runs only in a whole run (no arguments), after the integration tests.
if [ $# -eq 0 ]; then
  step "Kubernetes node conformance prerequisites (e2e.test, ginkgo, test images' binaries)"
  bash scripts/ensure-k8s-conformance.sh
fi

step "typecheck"
tsc --noEmit -p tsconfig.json

step "lint (biome, and the import rules of .dependency-cruiser.mjs)"
npm run --silent lint

step "unit tests"
node --import tsx --test --test-reporter=spec 'test/unit/**/*.test.ts'

step "integration tests and provider conformance suites"
tsx test/run-integration.ts "$@"

if [ $# -eq 0 ]; then
  step "Kubernetes node conformance subset (test/k8s-conformance/subset.ts)"
  tsx test/k8s-conformance/run.ts --subset
fi
