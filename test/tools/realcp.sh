#!/usr/bin/env bash
# Builds the lab's real control plane from test/realcp — kube-apiserver,
# kubeadm, kubelet, kube-controller-manager, kube-scheduler
# (k8s.io/kubernetes v1.34.2), etcd (go.etcd.io/etcd/server/v3 v3.6.4), a pause
# and the client-go probe kclient — once, into a cache directory outside the
# tree keyed by the module's sources, and prints that directory. Static
# (CGO_ENABLED=0: they run in containers with no libc too) and version-stamped
# (kubeadm's preflight compares the kubelet's version with its own). The first
# build from nothing takes an estimated 10-15 minutes on 2 cores (module
# download included; 334 s measured with part of the Go build cache warm); later
# runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/../realcp"
key=$(cat go.mod go.sum $(find cmd -name '*.go' | LC_ALL=C sort) | sha256sum | cut -c1-16)
dir="${NOVAEDGE_REALCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/novaedge-cpvip}/realcp-$key"
if [ ! -f "$dir/.built" ]; then
  echo "realcp: building kube-apiserver, etcd and kclient into $dir (first time: 10-15 min on 2 cores)" >&2
  mkdir -p "$dir"
  start=$(date +%s)
  v=k8s.io/component-base/version
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $v.gitVersion=v1.34.2 -X $v.gitMajor=1 -X $v.gitMinor=34 -X $v.gitTreeState=clean" -o "$dir/" ./cmd/...
  touch "$dir/.built"
  echo "realcp: built in $(( $(date +%s) - start )) s" >&2
fi
echo "$dir"
