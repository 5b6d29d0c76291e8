#!/usr/bin/env bash
# Brings a sandbox up and runs the samples: installs the plugin, starts the sandbox, applies
# samples/ and shows the jobs, their Workloads and pods. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo install --locked --quiet --path .
plugin="$(command -v kubectl-kueue_ext || echo "$HOME/.cargo/bin/kubectl-kueue_ext")"

"$plugin" up --workers 0
state_dir="${KUEUE_EXT_HOME:-${XDG_STATE_HOME:-$HOME/.local/state}/kueue-ext}"
kubectl=("$("$plugin" toolchain path)/kubectl" --kubeconfig "$state_dir/kubeconfig")

"${kubectl[@]}" apply --server-side -f samples/queues.yaml
"${kubectl[@]}" apply --server-side -R -f samples/batch
"${kubectl[@]}" wait --for=condition=complete job --all -n default --timeout=120s
"${kubectl[@]}" get jobs,workloads,pods -n default -o wide
"$plugin" status
