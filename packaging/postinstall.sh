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
if ! getent passwd novaedge-cpvip >/dev/null 2>&1; then
  echo "novaedge-cpvip: could not create the user novaedge-cpvip; the service will not start until it exists (systemd-sysusers novaedge-cpvip.conf)" >&2
fi
# The env file is the operator's: created from the shipped reference when
# missing, never replaced (the reference in /usr/share/novaedge-cpvip/ is
# the current one, with every setting explained).
if [ ! -e /etc/novaedge/cpvip.env ]; then
  mkdir -p /etc/novaedge
  (umask 077 && cp /usr/share/novaedge-cpvip/cpvip.env /etc/novaedge/cpvip.env)
fi
# Root writes it, the daemon's group reads it (its secrets too: the BGP
# password, the BFD key); nobody else. Also on an upgrade from a version
# that ran as root and installed it 0600.
if getent group novaedge-cpvip >/dev/null 2>&1 && [ -f /etc/novaedge/cpvip.env ]; then
  chown root:novaedge-cpvip /etc/novaedge/cpvip.env
  chmod 0640 /etc/novaedge/cpvip.env
fi
# k3s keeps its CA where only root may read it: the service cannot verify
# the apiserver with it (docs/k3s.md says how to give it a copy).
k3s_ca=/var/lib/rancher/k3s/server/tls/server-ca.crt
if [ -e "$k3s_ca" ] && command -v runuser >/dev/null 2>&1 && ! runuser -u novaedge-cpvip -- test -r "$k3s_ca" 2>/dev/null \
   && ! grep -q '^NOVAEDGE_CP_VIP_CA_FILE=' /etc/novaedge/cpvip.env 2>/dev/null; then
  echo "novaedge-cpvip: the service runs as the user novaedge-cpvip, which cannot read k3s's CA ($k3s_ca): give it a copy and set NOVAEDGE_CP_VIP_CA_FILE (docs/k3s.md)" >&2
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload || true
  # An upgrade restarts a service that was running, so the new binary runs.
  if systemctl is-active --quiet novaedge-cpvip.service; then
    systemctl try-restart novaedge-cpvip.service || true
  fi
fi
exit 0
