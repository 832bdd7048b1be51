#!/bin/sh
# novaedge-cpvip postinstall: the service's user, the env file readable by
# its group, and make systemd see the unit. The service is not enabled or
# started here: it needs NOVAEDGE_CP_VIP_ADDRESS in /etc/novaedge/cpvip.env
# first (then: systemctl enable --now novaedge-cpvip).
set -e
if command -v systemd-sysusers >/dev/null 2>&1; then
  systemd-sysusers novaedge-cpvip.conf || true
elif ! getent passwd novaedge-cpvip >/dev/null 2>&1 && command -v useradd >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir / --shell /usr/sbin/nologin novaedge-cpvip || true
fi
# Root writes it, the daemon's group reads it (its secrets too: the BGP
# password, the BFD key); nobody else. Also on an upgrade from a version
# that ran as root and installed it 0600.
if getent group novaedge-cpvip >/dev/null 2>&1 && [ -f /etc/novaedge/cpvip.env ]; then
  chown root:novaedge-cpvip /etc/novaedge/cpvip.env
  chmod 0640 /etc/novaedge/cpvip.env
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
  # An upgrade restarts a service that was running, so the new binary runs.
  if systemctl is-active --quiet novaedge-cpvip.service; then
    systemctl try-restart novaedge-cpvip.service || true
  fi
fi
exit 0
