#!/usr/bin/env bash
# The whole test suite: style, lints, unit tests and the end-to-end tests against real
# sandboxes, on the process runtime and (tests/e2e_kind.rs) on kind clusters in Docker. The
# first run on a machine builds the pinned Kubernetes/Kueue toolchain and the kind node image
# (cached by version under $KUEUE_EXT_CACHE or ~/.cache/kueue-ext, images in Docker); later
# runs reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "format"
cargo fmt --check

step "lints"
cargo clippy --locked --all-targets -- -D warnings

step "no import circles between files under src/"
python3 hack/import-circles.py

step "one TLS provider (ring): aws-lc-rs must not be in the dependency tree"
if cargo tree --locked -i aws-lc-rs >/dev/null 2>&1; then
  echo "aws-lc-rs is in the dependency tree" >&2
  exit 1
fi

step "tmux (the watch end-to-end test drives the real TUI in it)"
command -v tmux || apt-get install -y tmux || { apt-get update && apt-get install -y tmux; }

step "Docker and debootstrap (the kind runtime's end-to-end tests build their images here)"
hack/docker.sh up
trap 'hack/docker.sh down' EXIT
command -v debootstrap || apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }

step "toolchain (cold: builds Kubernetes, etcd, kwok and Kueue once)"
cargo build --locked
target/debug/kubectl-kueue_ext toolchain install

step "tests (unit and end-to-end)"
summary=target/tmp/crash-safety-summary.md
rm -f "$summary"
cargo test --locked

step "crash safety: what tests/e2e_crash_safety.rs counted"
cat "$summary"
