#!/bin/sh
# novaedge-cpvip postremove: forget the removed unit; a purge also deletes
# the env file the postinst created (remove keeps it).
set -e
if [ "$1" = purge ]; then
  rm -f /etc/novaedge/cpvip.env
  rmdir /etc/novaedge 2>/dev/null || true
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
fi
exit 0
