#!/bin/sh
# novaedge-cpvip postinstall: make systemd see the unit. The service is not
# enabled or started here: it needs NOVAEDGE_CP_VIP_ADDRESS in
# /etc/novaedge/cpvip.env first (then: systemctl enable --now novaedge-cpvip).
set -e
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
  # An upgrade restarts a service that was running, so the new binary runs.
  if systemctl is-active --quiet novaedge-cpvip.service; then
    systemctl try-restart novaedge-cpvip.service || true
  fi
fi
exit 0
