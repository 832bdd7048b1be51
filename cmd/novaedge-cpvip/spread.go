package main

import (
	"log/slog"
	"net"
	"net/netip"
	"os"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/fdstore"
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
	keep, adopted := keptConnections(true, log)
	return spread.New(spread.Config{VIPs: vips, Port: cfg.APIPort, Remotes: remotes, Keep: keep, Adopted: adopted,
		NewChecker: func(base netip.AddrPort) (*health.Checker, error) {
			ready := ""
			if cfg.Drain {
				ready = "https://" + base.String() + "/readyz"
			}
			return newCheckerOf(cfg, "https://"+base.String()+"/livez", ready, nil, log.With("backend", base.Addr().String()))
		}}, log)
}

// keptConnections opens systemd's descriptor store, where every carried
// connection is kept so that a restart or SIGKILL of ours cuts none (the
// unit's spread.conf drop-in enables it), and rebuilds the connections a
// previous run kept there; a run that does not spread (SPREAD off now, or
// BGP mode) closes them and removes them from the store. Without a store
// (not under systemd, or without the drop-in: a static pod) connections
// live as long as the process.
func keptConnections(spreading bool, log *slog.Logger) (spread.Keeper, []spread.Adopted) {
	inherited := fdstore.Inherited()
	store, err := fdstore.FromEnv()
	var k spread.Keeper
	if store != nil {
		k = store
	}
	adopted, errs := spread.AdoptFiles(inherited, k)
	for _, err := range errs {
		log.Warn("Cannot adopt a connection a previous run carried: closing it", "error", err)
	}
	closeOthers(inherited, log)
	switch {
	case !spreading:
		spread.Drop(adopted, k)
		if len(adopted) > 0 {
			log.Info("Closed the connections a previous run carried: this run does not spread", "count", len(adopted))
		}
		if store != nil {
			store.Close()
		}
		return nil, nil
	case err != nil:
		log.Warn("Cannot keep carried connections beyond the process: a restart of ours will cut them", "error", err)
	case store == nil:
		log.Info("Carried connections live as long as the process: no service manager's descriptor store (spread.conf sets one up under systemd)")
	}
	return k, adopted
}

// closeOthers closes inherited descriptors that are not ours to adopt.
func closeOthers(inherited map[string][]*os.File, log *slog.Logger) {
	for name, fs := range inherited {
		log.Warn("Closing descriptors passed by the service manager that are not ours", "name", name, "count", len(fs))
		for _, f := range fs {
			f.Close()
		}
	}
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
