#!/usr/bin/env bash
# A Docker daemon for the kind runtime, on machines that have none running.
#
#   hack/docker.sh up     installs Debian's docker.io when dockerd is missing, starts dockerd
#                         unless one already answers, and records the pid it started; raises
#                         the inotify limits that several clusters at once need
#   hack/docker.sh down   stops the dockerd this script started (by its recorded pid), nothing else
#
# Where the host's capability bounding set lacks CAP_SYS_RESOURCE (some CI sandboxes), runc
# cannot start a privileged container: dockerd then gets a runc wrapper that drops that one
# capability from what a container asks for. Elsewhere runc runs as it is.
set -euo pipefail

state="${KUEUE_EXT_DOCKER_STATE:-/var/lib/kueue-ext-docker}"
pidfile="$state/dockerd.pid"
log="$state/dockerd.log"

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

lacks_sys_resource() {
  local bounding
  bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
  # CAP_SYS_RESOURCE is capability 24.
  (( (16#$bounding >> 24 & 1) == 0 ))
}

write_runc_wrapper() {
  local wrapper="$state/runc-without-sys-resource"
  local real
  real=$(command -v runc)
  cat >"$wrapper" <<EOF
#!/usr/bin/env python3
# Drops CAP_SYS_RESOURCE from what runc is asked to grant, then runs the real runc: this host's
# bounding set lacks it, and a privileged container otherwise fails with "unable to apply caps".
import json, os, sys

REAL = "$real"
CAP = "CAP_SYS_RESOURCE"

def value_of(args, *flags):
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None

def drop(caps):
    for key in ("bounding", "effective", "inheritable", "permitted", "ambient"):
        if isinstance(caps.get(key), list):
            caps[key] = [c for c in caps[key] if c != CAP]

def rewrite(path, process_of):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    process = process_of(doc)
    if isinstance(process, dict) and isinstance(process.get("capabilities"), dict):
        drop(process["capabilities"])
        with open(path, "w") as f:
            json.dump(doc, f)

args = sys.argv[1:]
command = next((a for a in args if a in ("create", "run", "exec")), None)
if command in ("create", "run"):
    bundle = value_of(args, "--bundle", "-b") or os.getcwd()
    rewrite(os.path.join(bundle, "config.json"), lambda doc: doc.get("process"))
elif command == "exec":
    process = value_of(args, "--process", "-p")
    if process:
        rewrite(process, lambda doc: doc)
os.execv(REAL, [REAL] + args)
EOF
  chmod 0755 "$wrapper"
  echo "$wrapper"
}

# Each kind node runs systemd, containerd and a kubelet, and each process-runtime cluster a
# kube-apiserver and Kueue, all holding inotify instances: a few clusters at once exhaust the
# kernel's default 128 per user, and the next one fails with "too many open files" (a known kind
# issue). Raised, never lowered; a host that refuses is said so and left as it is.
raise_inotify_limits() {
  local key want have
  for pair in max_user_instances=512 max_user_watches=524288; do
    key="fs.inotify.${pair%=*}" want="${pair#*=}"
    have=$(sysctl -n "$key")
    (( have >= want )) && continue
    if sysctl -qw "$key=$want" 2>/dev/null; then
      echo "$key: $have -> $want"
    else
      echo "$key is $have and cannot be raised here: many clusters at once may run out of it" >&2
    fi
  done
}

up() {
  raise_inotify_limits
  if answers; then
    echo "a Docker daemon answers already: using it"
    return
  fi
  if ! command -v dockerd >/dev/null; then
    echo "installing Debian's docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq docker.io >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq docker.io >/dev/null; }
  fi
  mkdir -p "$state"
  local args=(--host unix:///var/run/docker.sock --data-root "$state/data" --exec-root "$state/exec"
    --pidfile "$state/dockerd.own.pid")
  if lacks_sys_resource; then
    echo "the capability bounding set lacks CAP_SYS_RESOURCE: dockerd runs containers through a runc wrapper"
    args+=(--add-runtime "kueue-ext-runc=$(write_runc_wrapper)" --default-runtime kueue-ext-runc)
  fi
  # Its own process group, so it outlives this script but `down` finds exactly it.
  setsid dockerd "${args[@]}" >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 60); do
    if answers; then
      echo "dockerd $(docker version --format '{{.Server.Version}}') answers (pid $(cat "$pidfile"), log $log)"
      return
    fi
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "dockerd exited; the end of $log:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "dockerd did not answer within 30 s; see $log" >&2
  exit 1
}

down() {
  if [ ! -f "$pidfile" ]; then
    echo "no dockerd started by this script"
    return
  fi
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  rm -f "$pidfile"
  echo "dockerd (pid $pid) stopped"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
