#!/bin/bash
# PID 1 of a sandbox node before systemd: prepares what a node container lacks, then execs
# systemd. Runs in a privileged container with a private cgroup namespace.
set -o errexit -o nounset -o pipefail

say() { echo "kueue-ext node: $*" >&2; }

# Mount propagation for pod volumes.
mount --make-rshared /

# Each node is its own machine to kubelet.
rm -f /etc/machine-id
systemd-machine-id-setup >/dev/null
cat /proc/sys/kernel/random/uuid >/kind/product_uuid
for uuid in /sys/class/dmi/id/product_uuid /sys/devices/virtual/dmi/id/product_uuid; do
  if [[ -f $uuid ]]; then mount -o ro,bind /kind/product_uuid "$uuid"; fi
done

if [[ ! -f /sys/fs/cgroup/cgroup.controllers ]]; then
  say "detected cgroup v1"
  # kubelet runs its pods under the cgroup root /kubelet (kubelet.slice with the systemd
  # driver). Holding each hierarchy's copy with a bind mount keeps systemd from removing it
  # before kubelet starts.
  mount --make-rprivate /sys/fs/cgroup
  for hierarchy in $(findmnt -lun -o target -t cgroup); do
    for root in kubelet kubelet.slice; do
      mkdir -p "$hierarchy/$root"
      if [[ $hierarchy == */cpuset ]]; then
        cat "$hierarchy/cpuset.cpus" >"$hierarchy/$root/cpuset.cpus"
        cat "$hierarchy/cpuset.mems" >"$hierarchy/$root/cpuset.mems"
      fi
      mount --bind "$hierarchy/$root" "$hierarchy/$root"
    done
  done
  # runc on cgroup v1 does not know the misc controller; a node that shows it to systemd
  # gets pods whose cgroups it cannot create.
  if [[ -d /sys/fs/cgroup/misc ]]; then
    umount /sys/fs/cgroup/misc && rmdir /sys/fs/cgroup/misc || say "misc controller stays"
    grep -v misc /proc/cgroups >/kind/cgroups-without-misc
    mount --bind /kind/cgroups-without-misc /proc/cgroups
  fi
fi

# kube-proxy and the bridge plugin must write rules into the same iptables backend the host
# uses: the one that already holds rules.
legacy=$( (iptables-legacy-save 2>/dev/null || true) | grep -c '^-' || true)
nft=$( (timeout 5 iptables-nft-save 2>/dev/null || true) | grep -c '^-' || true)
mode=nft
if (( legacy > nft )); then mode=legacy; fi
update-alternatives --set iptables "/usr/sbin/iptables-$mode" >/dev/null
update-alternatives --set ip6tables "/usr/sbin/ip6tables-$mode" >/dev/null
say "iptables $mode"

exec "$@"
