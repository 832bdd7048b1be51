#!/usr/bin/env bash
# Installs what the tests and the demo need on a fresh Debian 12 machine, when
# it is missing: apt-get update once, then apt-get install -y. Needs root.
set -euo pipefail

# command -> Debian package
declare -A want=(
  [ip]=iproute2
  [tcpdump]=tcpdump
  [tshark]=tshark
  [ping]=iputils-ping
  [curl]=curl
  [keepalived]=keepalived
  # the spreading bench's side-by-side group (the kubeadm HA guide's haproxy)
  [haproxy]=haproxy
  [vtysh]=frr
  [bird]=bird2
  [rpm]=rpm
  [systemd-analyze]=systemd
  # the kubeadm lab: a containerd per node (Debian's 1.6, runc 1.1) and
  # what kubeadm's preflight and kubelet look for
  [containerd]=containerd
  [runc]=runc
  [iptables]=iptables
  [ethtool]=ethtool
  [/usr/lib/cni/bridge]=containernetworking-plugins
  # systemd nodes: a Debian tree booted with systemd as PID 1 (test/lab/systemd.go)
  [debootstrap]=debootstrap
  [systemd-nspawn]=systemd-container
  [nsenter]=util-linux
  # arm64 under emulation: the unit tests (make unit-arm64) and the mixed group
  [qemu-aarch64-static]=qemu-user-static
)

missing=()
for cmd in "${!want[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${want[$cmd]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; run as root (sudo make test) to install them" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
