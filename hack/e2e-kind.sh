#!/usr/bin/env bash
# The whole end-to-end suite on the kind runtime, one test file at a time (hack/test.sh runs
# tests/e2e_kind.rs on kind and the rest on the process runtime). Starts a Docker daemon with
# hack/docker.sh when none answers; the first run builds the kind node image (cached).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/docker.sh up
command -v debootstrap >/dev/null || apt-get install -y debootstrap
export KUEUE_EXT_RUNTIME=kind

cargo build --locked
for file in tests/e2e_*.rs; do
  name=$(basename "$file" .rs)
  printf '\n=== %s (kind runtime)\n' "$name"
  cargo test --locked --test "$name"
done
