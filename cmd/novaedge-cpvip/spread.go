package main

import (
	"log/slog"
	"net"
	"net/netip"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/spread"
)

// newSpreader returns the spreading of cfg, nil when it is off. The
// backends are SPREAD_BACKENDS (or PEERS) less this host's own addresses,
// so that one list serves every node.
func newSpreader(cfg *config.Config, log *slog.Logger) *spread.Spreader {
	if !cfg.Spread {
		return nil
	}
	log = log.With("component", "spread")
	own := ownAddrs(log)
	var remotes []netip.Addr
	for _, b := range cfg.SpreadBackendList() {
		if !own[b] {
			remotes = append(remotes, b)
		}
	}
	vips := make([]netip.Addr, len(cfg.VIPAddress))
	for i, v := range cfg.VIPAddress {
		vips[i] = v.Addr()
	}
	return spread.New(spread.Config{VIPs: vips, Port: cfg.APIPort, Remotes: remotes,
		NewChecker: func(base netip.AddrPort) (*health.Checker, error) {
			ready := ""
			if cfg.Drain {
				ready = "https://" + base.String() + "/readyz"
			}
			return newCheckerOf(cfg, "https://"+base.String()+"/livez", ready, nil, log.With("backend", base.Addr().String()))
		}}, log)
}

// ownAddrs are this host's addresses now.
func ownAddrs(log *slog.Logger) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	as, err := net.InterfaceAddrs()
	if err != nil {
		log.Warn("Cannot list this host's addresses: every backend listed is taken for another node's", "error", err)
		return out
	}
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr()] = true
		}
	}
	return out
}
