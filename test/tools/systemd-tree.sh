#!/usr/bin/env bash
# Builds the lab's systemd node tree — Debian 12 (bookworm) with systemd as
# init, from Debian's debootstrap and the machine's own apt mirror — once,
# into a cache directory outside the tree keyed by this script (its package
# list), and prints that directory. The e2e boots it with systemd-nspawn,
# one overlay per node (test/lab/systemd.go); the tree itself is never
# written to. About 35 s and 261 MB measured here. Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=bookworm
# The kubeadm nodes add containerd, runc and what kubeadm's preflight and
# kubelet look for (the same as the host lab's, test/tools/deps.sh).
packages=systemd,systemd-sysv,dbus,iproute2,procps,ca-certificates,containerd,runc,iptables,ethtool,conntrack,containernetworking-plugins
key=$( { cat "$here/systemd-tree.sh"; echo "$suite $packages"; } | sha256sum | cut -c1-16)
dir="${NOVAEDGE_REALCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/novaedge-cpvip}/systemd-tree-$key"
if [ ! -f "$dir/.built" ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  echo "systemd-tree: debootstrap $suite from $mirror into $dir" >&2
  start=$(date +%s)
  rm -rf "$dir.tmp" && mkdir -p "$(dirname "$dir")"
  if ! debootstrap --variant=minbase --include="$packages" "$suite" "$dir.tmp" "$mirror" > "$dir.log" 2>&1; then
    tail -20 "$dir.log" >&2
    exit 1
  fi
  # What Debian's installer writes and debootstrap does not; the node's
  # own name goes in at boot (test/lab/systemd.go).
  printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' > "$dir.tmp/etc/hosts"
  # No unit waits for a network the lab does not configure this way, and
  # nothing is fetched at boot.
  rm -f "$dir.tmp/etc/machine-id" && : > "$dir.tmp/etc/machine-id"
  rm -f "$dir.tmp"/var/cache/apt/archives/*.deb
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  touch "$dir/.built"
  echo "systemd-tree: built in $(( $(date +%s) - start )) s" >&2
fi
echo "$dir"
