#!/usr/bin/env bash
# Unpacks Debian 12's prometheus package (2.42: prometheus and promtool, static
# Go binaries) into a cache directory outside the tree, without installing it
# (no service, no user, nothing started), and prints the directory holding
# bin/prometheus and bin/promtool. About 10 s the first time (apt download);
# later runs reuse it. The version is apt's candidate (a Debian security
# update replaces the old one on the mirror).
set -euo pipefail
candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
version=$(candidate)
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  apt-get update -qq
  version=$(candidate)
fi
dir="${NOVAEDGE_REALCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/novaedge-cpvip}/prometheus-${version//[+~:]/-}"
if [ ! -x "$dir/bin/promtool" ] || [ ! -x "$dir/bin/prometheus" ]; then
  echo "prometheus: unpacking Debian's prometheus $version into $dir" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -qq "prometheus=$version" 2>/dev/null)
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/root"
  mkdir -p "$dir/bin"
  cp "$tmp/root/usr/bin/prometheus" "$tmp/root/usr/bin/promtool" "$dir/bin/"
fi
echo "$dir"
