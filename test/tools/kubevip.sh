#!/usr/bin/env bash
# Builds kube-vip v1.2.2 from its Go module (test/kubevip, a module of its own)
# once into a cache directory outside the tree, keyed by the module's sources,
# and prints the binary's path. About 70 s the first time (module download
# included); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/../kubevip"
key=$(cat go.mod go.sum main.go | sha256sum | cut -c1-16)
dir="${NOVAEDGE_REALCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/novaedge-cpvip}/kubevip-$key"
if [ ! -x "$dir/kube-vip" ]; then
  echo "kubevip: building kube-vip v1.2.2 into $dir" >&2
  mkdir -p "$dir"
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/kube-vip.tmp" .
  mv "$dir/kube-vip.tmp" "$dir/kube-vip"
  echo "kubevip: built in $(( $(date +%s) - start )) s" >&2
fi
echo "$dir/kube-vip"
