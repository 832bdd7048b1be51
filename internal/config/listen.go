package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// LocalReach returns where a listener at listen (a METRICS_ADDR) is
// reached from its own host: an unspecified host (":9450", "0.0.0.0:9450",
// "[::]:9450", which accept IPv4 too) on 127.0.0.1, any other as it is. It
// also returns the port.
func LocalReach(listen string) (string, int, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", listen, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("%q: port %q", listen, port)
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), n, nil
}

// IsLoopbackListen says whether a listener at listen accepts loopback
// clients only.
func IsLoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
