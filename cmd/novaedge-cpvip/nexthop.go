package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/bgp"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/ifaddr"
)

// nextHopWait is how long start-up waits for an IPv6 address toward an IPv4
// peer to finish duplicate address detection (about 1-2 s after link up).
const nextHopWait = 10 * time.Second

// setIPv6NextHops gives every IPv4 peer the IPv6 next hop of the IPv6 VIP
// when no IPv6 peer exists (MP-BGP over the IPv4 sessions): the configured
// NOVAEDGE_BGP_NEXT_HOP if it is IPv6, else the address of the interface
// toward that peer.
func setIPv6NextHops(ctx context.Context, cfg *config.Config, peers []bgp.Peer, log *slog.Logger) error {
	if !cfg.IPv6OverIPv4() {
		return nil
	}
	for i := range peers {
		if cfg.BGPNextHop.Is6() {
			peers[i].NextHop6 = cfg.BGPNextHop
			continue
		}
		nh, err := ipv6Toward(ctx, peers[i], cfg, log)
		if err != nil {
			return fmt.Errorf("IPv6 VIP over the IPv4 session with %s: %w (give that interface a global IPv6 address or set NOVAEDGE_BGP_NEXT_HOP to one)", peers[i].Address, err)
		}
		peers[i].NextHop6 = nh
	}
	return nil
}

func ipv6Toward(ctx context.Context, p bgp.Peer, cfg *config.Config, log *slog.Logger) (netip.Addr, error) {
	deadline := time.Now().Add(nextHopWait)
	for logged := false; ; logged = true {
		nh, ifname, err := ifaddr.IPv6Toward(p.Address, cfg.VIPAddress)
		if err == nil || !errors.Is(err, ifaddr.ErrNoIPv6) || time.Now().After(deadline) {
			return nh, err
		}
		if !logged {
			log.Info("Waiting for an IPv6 address toward the BGP peer", "peer", p.Address, "interface", ifname)
		}
		select {
		case <-ctx.Done():
			return nh, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
