#!/usr/bin/env bash
# The end-to-end suite on the kind runtime, one test file at a time. Needs a Docker daemon,
# kind on PATH (kind v0.32.x) and the network to pull kind's node image and Kueue's release.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v kind >/dev/null || { echo "kind is not on PATH: install kind v0.32.0" >&2; exit 1; }
docker version --format '{{.Server.Version}}' >/dev/null || { echo "no Docker daemon answers" >&2; exit 1; }

# The controller image is FROM scratch: it needs the static build.
KUEUE_EXT_CONTROLLER_BINARY="${KUEUE_EXT_CONTROLLER_BINARY:-$(hack/build-static.sh | tail -n 1)}"
export KUEUE_EXT_CONTROLLER_BINARY
export KUEUE_EXT_RUNTIME=kind

cargo build --locked
for file in tests/e2e_*.rs; do
  name=$(basename "$file" .rs)
  printf '\n=== %s (kind runtime)\n' "$name"
  cargo test --locked --test "$name"
done
