#!/usr/bin/env bash
# The whole test suite: style, lints, unit tests and the end-to-end tests against real
# sandboxes, on the process runtime and (tests/e2e/kind.rs) on kind clusters in Docker. The
# first run on a machine builds the pinned Kubernetes/Kueue toolchain and the kind node image
# (cached by version under $KUEUE_EXT_CACHE or ~/.cache/kueue-ext, images in Docker), in the
# background while the lints and tests that do not need them run; later runs reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "format"
cargo fmt --check

step "tmux (the watch end-to-end test drives the real TUI in it)"
command -v tmux || apt-get install -y tmux || { apt-get update && apt-get install -y tmux; }

step "Docker and debootstrap (the kind runtime's end-to-end tests build their images here)"
hack/docker.sh up
trap 'hack/docker.sh down' EXIT
command -v debootstrap || apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }

step "toolchain, kind images and add-ons: built in the background from here on"
# Cold, the toolchain's go build takes about 12 minutes on 2 cores, the kind images about 5 and
# the four add-ons about 15 more. The toolchain builds while the lints and unit tests run; then
# the kind images at the same priority as the process-runtime tests (the kind lane's tests take
# longest and wait for them), and the add-ons at a low one. Every test waits for what it needs
# (file locks of the cache); the last step says whether the build itself failed.
cargo build --locked
mkdir -p target/tmp
builds_log=target/tmp/background-builds.log
set -m # the builds get a process group of their own, which the trap below stops whole
{
  target/debug/kubectl-kueue_ext toolchain install &&
    target/debug/kubectl-kueue_ext toolchain install --kind &&
    nice -n 15 target/debug/kubectl-kueue_ext toolchain install --kind --addons jobset,appwrapper,kubeflow,tekton
} >"$builds_log" 2>&1 &
builds=$!
set +m
trap 'kill -- "-$builds" 2>/dev/null || true; hack/docker.sh down' EXIT
echo "process group $builds, log $builds_log"

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

step "tests: unit and command line"
cargo test --locked --features e2e --lib --bins --test cli

step "tests: end-to-end (--features e2e: one binary, tests/e2e/)"
summary=target/tmp/crash-safety-summary.md
kind_summary=target/tmp/kind-soak-summary.md
turns=target/tmp/e2e-turns.tsv
rm -f "$summary" "$kind_summary" "$turns"
# Tests take turns in three lanes, process-runtime sandboxes and two of kind clusters (the second
# for clusters of names of their own: the soak, connect's), which run side by side
# (tests/e2e/common.rs). Every test gets a thread at once and waits there for what it
# needs and for its lane: the kind lane starts as soon as the kind images are built, not when
# the test harness's name order reaches the kind tests.
cargo test --locked --features e2e --test e2e -- --test-threads=100

step "the background builds"
if ! wait "$builds"; then
  tail -n 40 "$builds_log" >&2
  echo "a background build failed (log: $builds_log)" >&2
  exit 1
fi
tail -n 1 "$builds_log"

step "end-to-end tests that start clusters, slowest first (seconds each held its turn)"
if [[ -f $turns ]]; then sort -t $'\t' -k2,2nr "$turns" | head -20; fi

step "crash safety: what tests/e2e/crash_safety.rs and tests/e2e/kind_soak.rs counted"
cat "$summary" "$kind_summary"
