#!/usr/bin/env bash
# Soak: the end-to-end crash-safety test (tests/e2e/crash_safety.rs) at a larger size, on a
# MultiKueue sandbox (manager + 2 workers). The jobs go in over several waves; during each wave
# a round of faults lands at random moments: our controller SIGKILLed and restarted five times
# on random clusters, Kueue's manager restarted, a worker's kube-apiserver restarted. Every job
# must finish exactly once, counted from the pods, Workloads and components that really existed
# (jobs Kueue's MultiKueue itself dispatched to a second worker are counted apart).
# Plain batch/v1 Jobs go in beside ours (KUEUE_EXT_CRASH_BATCH_JOBS, default a tenth of the
# ExternalJobs): Kueue runs them through its own integration, a peer under the same faults.
# Prints a summary table (submitted, finished once, lost, duplicated, dispatched twice by Kueue,
# orphans, faults, time), one row for ours and one for the peer.
#
#   hack/soak.sh [EXTERNAL_JOBS] [WRAPPED_JOBS] [ROUNDS] [SEED]   default 2000 300 10, random seed
#
# With --kind, the kind soak (tests/e2e/kind_soak.rs) instead, on kind clusters (a manager and a
# worker) where pods really run: jobs of every kind under our controller's and Kueue's pods
# deleted, the worker's node container restarted and its kube-apiserver killed, then an upgrade
# of our controller with jobs in flight. Needs Docker (hack/docker.sh up).
#
#   hack/soak.sh --kind [JOBS] [FAULTS] [SEED]   default 300 30, random seed
#
# The log lands in target/soak/; a failing run is replayed with the seed it printed.
set -euo pipefail
cd "$(dirname "$0")/.."

test=crash_safety::every_job_finishes_exactly_once
summary="crash-safety summary"
if [ "${1:-}" = --kind ]; then
  shift
  test=kind_soak::every_job_finishes_exactly_once_on_kind
  summary="kind soak summary"
  export KUEUE_EXT_KIND_SOAK_JOBS="${1:-300}"
  export KUEUE_EXT_KIND_SOAK_FAULTS="${2:-30}"
  if [ -n "${3:-}" ]; then export KUEUE_EXT_KIND_SOAK_SEED="$3"; fi
else
  export KUEUE_EXT_CRASH_EXTERNAL_JOBS="${1:-2000}"
  export KUEUE_EXT_CRASH_WRAPPED_JOBS="${2:-300}"
  export KUEUE_EXT_CRASH_ROUNDS="${3:-10}"
  export KUEUE_EXT_CRASH_BATCH_JOBS="${KUEUE_EXT_CRASH_BATCH_JOBS:-$((KUEUE_EXT_CRASH_EXTERNAL_JOBS / 10))}"
  if [ -n "${4:-}" ]; then export KUEUE_EXT_CRASH_SEED="$4"; fi
fi

mkdir -p target/soak
log="target/soak/soak-$(date -u +%Y%m%dT%H%M%SZ).log"
cargo build --locked --tests
target/debug/kubectl-kueue_ext toolchain install
export KUEUE_EXT_KEEP_LOGS=1  # every component's log and the clusters' objects, kept in target/tmp/e2e-logs/
status=0
cargo test --locked --features e2e --test e2e "$test" -- --nocapture 2>&1 | tee "$log" || status=$?
echo
grep -A 12 "$summary" "$log" || echo "no summary: the run stopped before the end (see $log)"
echo "log: $log"
exit "$status"
