#!/bin/sh
# novaedge-cpvip preremove: on removal (not upgrade) stop the service, which
# releases the VIP, and disable it.
set -e
case "$1" in
  remove|purge|0)
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      systemctl disable --now novaedge-cpvip.service || true
    fi
    ;;
esac
exit 0
