package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/l2"
)

// hostRetry is how often a host condition that can heal is looked at again;
// hostLogEvery how many looks pass between two log lines about it.
const (
	hostRetry    = 500 * time.Millisecond
	hostLogEvery = 60
)

// waitHost calls look until it succeeds. Conditions of the host that can
// heal (an interface created late at boot, an address not there yet) are
// waited out and logged; an invalid configuration (*config.Error) is
// returned at once, as is the end of ctx.
func waitHost(ctx context.Context, log *slog.Logger, what string, look func() error) error {
	for tries := 0; ; tries++ {
		err := look()
		var invalid *config.Error
		if err == nil || errors.As(err, &invalid) {
			if err == nil && tries > 0 {
				log.Info("Waited for the host: ready", "for", what, "after", time.Duration(tries)*hostRetry)
			}
			return err
		}
		if tries%hostLogEvery == 0 {
			log.Warn("Waiting for the host", "for", what, "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(hostRetry):
		}
	}
}

// l2Interface waits for the L2 interface: the configured one to exist, or
// one to detect, with an address of the VIP's subnet when the VIP has a
// subnet prefix; a subnet prefix that is not the interface's is invalid.
func l2Interface(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, error) {
	ifname := cfg.Interface
	err := waitHost(ctx, log, "the VIP's interface", func() error {
		if cfg.Interface == "" {
			var err error
			if ifname, err = l2.DetectInterface(cfg.VIPAddress); err != nil {
				return err
			}
		}
		addrs, err := interfaceAddrs(ifname)
		if err != nil {
			return err
		}
		return cfg.ValidateOnInterface(ifname, addrs)
	})
	if err == nil && cfg.Interface == "" {
		log.Info("Detected interface", "interface", ifname)
	}
	return ifname, err
}

// hostInterface waits until the interface ifname exists.
func hostInterface(ctx context.Context, ifname string, log *slog.Logger) error {
	return waitHost(ctx, log, "interface "+ifname, func() error {
		_, err := interfaceAddrs(ifname)
		return err
	})
}

func interfaceAddrs(ifname string) ([]netip.Prefix, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("interface %s: %w", ifname, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", ifname, err)
	}
	out := make([]netip.Prefix, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ip, _ := netip.AddrFromSlice(n.IP)
			bits, _ := n.Mask.Size()
			out = append(out, netip.PrefixFrom(ip.Unmap(), bits))
		}
	}
	return out, nil
}
