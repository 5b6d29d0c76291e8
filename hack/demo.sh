#!/usr/bin/env bash
# The README's quick start, as a newcomer runs it: installs the plugin, brings a sandbox up (kind
# where a Docker daemon answers, local processes elsewhere, as `up` chooses), submits samples/,
# and ends in the `watch` view. KUEUE_EXT_RUNTIME=kind|process forces a runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

# On a fresh machine the toolchain's Go modules (about 850 MB) download while cargo builds:
# the network works beside the CPU, and the toolchain build then finds them in Go's cache.
(cd hack/toolchain && go mod download) &
prefetch=$!
# The dev profile, in this clone's target/: a cold build takes a third of the release one, and
# hack/test.sh and the end-to-end tests reuse what it built.
cargo install --locked --quiet --debug --path .
# A failed download is not fatal here: the toolchain build fetches what is missing and says why.
wait "$prefetch" || true
plugin="$(command -v kubectl-kueue_ext || echo "$HOME/.cargo/bin/kubectl-kueue_ext")"

"$plugin" up
"$plugin" submit -f samples/ --wait=5m
"$plugin" status
# On a terminal the live view (q quits); otherwise the same tables, printed once.
"$plugin" watch
