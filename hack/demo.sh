#!/usr/bin/env bash
# Brings a sandbox up and runs the samples: installs the plugin, starts a manager and two
# workers with Kueue and MultiKueue, submits samples/ and shows where everything ran, ending in
# the `watch` view.
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

# The samples are sized for the process runtime's kwok nodes (32 CPU a worker); KUEUE_EXT_RUNTIME=kind
# runs the demo on kind clusters, where the pods that fit a real node run for real.
runtime="${KUEUE_EXT_RUNTIME:-process}"
kinds=jobs,externaljobs,wrappedjobs,workloads
if [ "$runtime" = process ]; then
  kinds=jobs,jobsets,externaljobs,wrappedjobs,workloads
  # JobSet's own controller runs beside Kueue on every cluster, and JobSets are queued by the
  # integrations file alone.
  "$plugin" up --runtime process --addons jobset --integrations samples/third-party/jobset-integration.yaml
  "$plugin" submit samples/ --wait=5m
else
  # The JobSet samples ask for more CPU than a kind node has (they are sized for kwok's): they stay out.
  "$plugin" up --runtime "$runtime"
  mapfile -t samples < <(find samples -name '*.yaml' ! -name 'jobset*.yaml' | sort)
  "$plugin" submit "${samples[@]}" --wait=5m
fi

state_dir="${KUEUE_EXT_HOME:-${XDG_STATE_HOME:-$HOME/.local/state}/kueue-ext}"
kubectl=("$("$plugin" toolchain path)/kubectl" --kubeconfig "$state_dir/kubeconfig")
for cluster in manager worker1 worker2; do
  echo
  echo "=== $cluster"
  "${kubectl[@]}" --context "kueue-ext-$cluster" get "$kinds" -n default
done
echo
"$plugin" status
# On a terminal the live view (q quits); otherwise the same table, printed once.
"$plugin" watch
