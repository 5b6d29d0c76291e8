#!/usr/bin/env bash
# Fuzzes the admission webhooks (AdmissionReview decoding, defaulting and validation of
# ExternalJob and WrappedJob) with cargo-fuzz and libFuzzer: fuzz/fuzz_targets/admission.rs.
# libFuzzer needs a nightly toolchain; `cargo test` runs the same target on stable over the
# committed corpus and a bounded seeded stream (src/controller/fuzz.rs).
#
#   hack/fuzz.sh [SECONDS]     default 300
#
# A failing input lands in fuzz/artifacts/admission/; copy it (minimized with
# `cargo +nightly fuzz tmin admission FILE`) into fuzz/corpus/admission/ so `cargo test`
# replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "hack/fuzz.sh: libFuzzer needs a nightly toolchain: rustup toolchain install nightly" >&2
    exit 1
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

# New inputs go to a scratch dir; the committed corpus stays as reviewed.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cargo +nightly fuzz run admission "$scratch" fuzz/corpus/admission -- \
    -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1
