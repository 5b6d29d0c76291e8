#!/usr/bin/env bash
# The whole test suite: style, lints, unit tests and the end-to-end tests against real
# sandboxes, on the process runtime and (tests/e2e/kind.rs) on kind clusters in Docker. The
# first run on a machine builds the pinned Kubernetes/Kueue toolchain and the kind node image
# (cached by version under $KUEUE_EXT_CACHE or ~/.cache/kueue-ext, images in Docker); later
# runs reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "format"
cargo fmt --check

step "lints"
cargo clippy --locked --all-targets --features e2e -- -D warnings

step "imports: no circles, none against the layers lib.rs lists, no kind adapter using another"
python3 hack/import-circles.py

step "one TLS provider (ring): aws-lc-rs must not be in the dependency tree"
# `cargo tree -i` of a package outside the graph fails with exactly this; any other failure (a
# stale lock, no network, a bad flag) proves nothing, and a success is a path to aws-lc-rs.
# shellcheck disable=SC2016 # the backquotes are cargo's, not a command substitution
if tree=$(cargo tree --locked -i aws-lc-rs 2>&1); then
  printf '%s\n\naws-lc-rs is in the dependency graph (cargo tree -i above)\n' "$tree" >&2
  exit 1
elif [[ $tree != *'package ID specification `aws-lc-rs` did not match any packages'* ]]; then
  printf '%s\n\ncargo tree failed: cannot tell whether aws-lc-rs is in the dependency tree\n' "$tree" >&2
  exit 1
fi
echo "absent"

step "tmux (the watch end-to-end test drives the real TUI in it)"
command -v tmux || apt-get install -y tmux || { apt-get update && apt-get install -y tmux; }

step "Docker and debootstrap (the kind runtime's end-to-end tests build their images here)"
hack/docker.sh up
trap 'hack/docker.sh down' EXIT
command -v debootstrap || apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }

step "toolchain (cold: builds Kubernetes, etcd, kwok and Kueue once)"
cargo build --locked
target/debug/kubectl-kueue_ext toolchain install

step "tests: unit, command line, and end-to-end (--features e2e: one binary, tests/e2e/)"
summary=target/tmp/crash-safety-summary.md
turns=target/tmp/e2e-turns.tsv
rm -f "$summary" "$turns"
cargo test --locked --features e2e

step "end-to-end tests that start clusters, slowest first (seconds each held its turn)"
if [[ -f $turns ]]; then sort -t $'\t' -k2,2nr "$turns" | head -20; fi

step "crash safety: what tests/e2e/crash_safety.rs counted"
cat "$summary"
