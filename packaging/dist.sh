#!/usr/bin/env bash
# Release files in dist/ next to the packages and the OCI layout: the static
# binary of each architecture, a CycloneDX SBOM of each binary and of each
# platform's image (cyclonedx-gomod, from the binary's embedded build
# information: every Go module with its version), the OCI layout as one tar
# file, and SHA256SUMS of them all. Every timestamp is SOURCE_DATE_EPOCH, so
# two builds of one commit give the same bytes (make reproducible checks it).
#   packaging/dist.sh VERSION ARCH...
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1; shift
: "${SOURCE_DATE_EPOCH:?set SOURCE_DATE_EPOCH (the Makefile does: the commit time)}"
cdx="${GO:-go} run github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.9.0"
stamp=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
# sbom BINARY OUT: the serial number would be random (omitted); the
# generator stamps the current time, replaced by SOURCE_DATE_EPOCH's.
sbom() {
  $cdx bin -json -noserial -version "$version" -output "$2" "$1"
  sed -i "s/^    \"timestamp\": \".*\",\$/    \"timestamp\": \"$stamp\",/" "$2"
  grep -q "\"timestamp\": \"$stamp\"" "$2" || { echo "dist: $2: timestamp not fixed" >&2; exit 1; }
}
mkdir -p dist
for arch in "$@"; do
  bin=bin/linux-$arch/novaedge-cpvip
  [ -x "$bin" ] || { echo "dist: $bin missing (make build-all)" >&2; exit 1; }
  install -m 0755 "$bin" "dist/novaedge-cpvip_${version}_linux_${arch}"
  sbom "$bin" "dist/novaedge-cpvip_${version}_linux_${arch}.cdx.json"
  if [ -d dist/oci ]; then
    # The image of this platform holds this binary and nothing else.
    sbom "$bin" "dist/novaedge-cpvip_${version}_image_linux_${arch}.cdx.json"
  fi
done
if [ -d dist/oci ]; then
  tar -C dist/oci --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -cf "dist/novaedge-cpvip_${version}_oci.tar" .
fi
(cd dist && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)
echo "dist: $(wc -l < dist/SHA256SUMS) files in dist/SHA256SUMS"
