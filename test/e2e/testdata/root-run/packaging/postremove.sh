#!/bin/sh
# novaedge-cpvip postremove: forget the removed unit.
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
fi
exit 0
