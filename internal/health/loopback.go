package health

import (
	"context"
	"net"
	"net/url"
	"strings"
)

// loopback returns the addresses of host when it is a localhost name (RFC
// 6761 section 6.3: "localhost" and the names under ".localhost" are the
// loopback addresses, resolved without a name service): 127.0.0.1, then
// ::1. Anything else: nil, the dialer resolves it. A node whose /etc/hosts
// lacks localhost and whose DNS server is unreachable is still checked
// (TestLocalhostIsNeverLookedUp).
func loopback(host string) []string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h != "localhost" && !strings.HasSuffix(h, ".localhost") {
		return nil
	}
	return []string{"127.0.0.1", "::1"}
}

// dialServer opens a TCP connection to u's server (DialHost).
func dialServer(ctx context.Context, dial func(context.Context, string) (net.Conn, error), u *url.URL) (net.Conn, error) {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return DialHost(ctx, dial, u.Hostname(), port)
}

// DialHost opens a TCP connection to host:port with dial, as the check
// reaches the apiserver. A localhost name is dialled at its loopback
// addresses in turn (an apiserver may listen on one family only); when
// none answers, the error is 127.0.0.1's, so a refused port is known as
// refused at once on a host without IPv6.
func DialHost(ctx context.Context, dial func(context.Context, string) (net.Conn, error), host, port string) (net.Conn, error) {
	addrs := loopback(host)
	if addrs == nil {
		return dial(ctx, net.JoinHostPort(host, port))
	}
	var first error
	for _, a := range addrs {
		c, err := dial(ctx, net.JoinHostPort(a, port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}
