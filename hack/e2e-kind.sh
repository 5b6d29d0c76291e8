#!/usr/bin/env bash
# The end-to-end tests that hold on either runtime, run on the kind runtime, one module of
# tests/e2e/ at a time: kind.rs (kind's own, which always runs on kind and which hack/test.sh runs
# too), then the modules written for whichever runtime KUEUE_EXT_RUNTIME names (tests/e2e/common.rs
# and `up` read it). The other modules test the process runtime itself (its pids, kwok's fake
# pods) and cannot pass on kind: they are listed below with the reason, and hack/test.sh runs
# them on the process runtime. A module missing from both lists stops this script before it
# starts anything. Starts a Docker daemon with hack/docker.sh when none answers (and stops the
# one it started); the first run builds the kind node image (cached).
set -euo pipefail
cd "$(dirname "$0")/.."

on_kind=(
  kind            # kind's own: Sandbox::up_on_kind, real pods of kueue-ext.local/busybox
  submit          # the README's quick start and samples/ (busybox pods), on $KUEUE_EXT_RUNTIME
  configured_kind # a CRD-only kind whose controller the test plays: no pod runs
  completion      # names listed from a sandbox on $KUEUE_EXT_RUNTIME; no pod must run
  own_cluster     # always kind: a plain kind cluster, Kueue applied by kubectl, then install
  wrapped_vs_appwrapper # always kind: AppWrapper's controller beside ours, busybox pods that exit
  kind_soak       # always kind: pods deleted, a node container restarted, an upgrade rolled
)
not_on_kind=(
  addons              # asserts JobSet's pods ran on kwok-* nodes; down_leaves_nothing reads pids
  conformance         # pods of image registry.invalid/… that only kwok "runs" (run-duration)
  crash               # crash_safety's helpers, unit-tested: no sandbox, nothing of a runtime to check
  crash_safety        # SIGKILLs the components' recorded processes (Restarts)
  declarative         # batch Jobs of registry.invalid pods, run by kwok
  doctor              # a healthy process sandbox has no Kueue Deployment; registry.invalid pods run by kwok
  external_job        # kills and restarts the controller process; kwok-labelled flavor
  kubectl_plugin      # no sandbox at all: nothing of a runtime to check
  manifests           # the in-cluster install on a cluster without it (kind's `up` installs it)
  multikueue          # kills a worker's kube-apiserver process; down_leaves_nothing reads pids
  pod_templates       # registry.invalid pods that must finish, run by kwok
  published_manifests # registry.invalid and registry.k8s.io pods, run by kwok
  sandbox_robustness  # pids and ports of the recorded processes
  security            # kills and replicates the controller process
  single_cluster      # asserts runtime "process", --component-arg, kwok nodes
  watch               # registry.invalid jobs that must run and finish, run by kwok
  wrapped_job         # kills and restarts the controller process; kwok-labelled flavor
)

e2e=(cargo test --locked --features e2e --test e2e)
# The suite's own list of its tests (`MODULE::NAME: test`): builds it, starts nothing.
tests=$("${e2e[@]}" -- --list | sed -n 's/: test$//p')
modules=$(cut -d: -f1 <<<"$tests" | sort -u)
listed=" ${on_kind[*]} ${not_on_kind[*]} "
unlisted=()
for module in $modules; do
  [[ $listed == *" $module "* ]] || unlisted+=("$module")
done
stale=()
for module in "${on_kind[@]}" "${not_on_kind[@]}"; do
  grep -qx "$module" <<<"$modules" || stale+=("$module")
done
if ((${#unlisted[@]} + ${#stale[@]})); then
  ((${#unlisted[@]} == 0)) || echo "hack/e2e-kind.sh: modules in neither on_kind nor not_on_kind: ${unlisted[*]}" >&2
  ((${#stale[@]} == 0)) || echo "hack/e2e-kind.sh: listed, but the e2e suite has no test in: ${stale[*]}" >&2
  exit 1
fi

hack/docker.sh up
trap 'hack/docker.sh down' EXIT
command -v debootstrap >/dev/null || apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }
export KUEUE_EXT_RUNTIME=kind

failed=()
for module in "${on_kind[@]}"; do
  printf '\n=== tests/e2e/%s.rs (kind runtime)\n' "$module"
  # By exact name: a filter is a substring, and `kind::` is also in `configured_kind::`.
  mapfile -t names < <(grep "^$module::" <<<"$tests")
  "${e2e[@]}" -- --exact "${names[@]}" || failed+=("$module")
done
if ((${#failed[@]})); then
  printf '\nfailed on the kind runtime: %s\n' "${failed[*]}" >&2
  exit 1
fi
