package health

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"syscall"
	"testing"
)

// TestLocalhostIsNeverLookedUp: the check of https://localhost:PORT dials the
// loopback addresses itself, never the name (issue 32 finding 7: a node
// without localhost in /etc/hosts and with an unreachable DNS server was
// never healthy). RFC 6761 section 6.3.
func TestLocalhostIsNeverLookedUp(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"https://localhost:6443/livez", []string{"127.0.0.1:6443", "[::1]:6443"}},
		{"https://LocalHost.:6443/livez", []string{"127.0.0.1:6443", "[::1]:6443"}},
		{"https://api.localhost/livez", []string{"127.0.0.1:443", "[::1]:443"}},
		{"https://192.0.2.10:6443/livez", []string{"192.0.2.10:6443"}},
		{"https://localhost.example:6443/livez", []string{"localhost.example:6443"}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			p, err := newProbe(tc.url, "")
			if err != nil {
				t.Fatal(err)
			}
			var dialled []string
			p.dialTCP = func(_ context.Context, address string) (net.Conn, error) {
				dialled = append(dialled, address)
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			err = p.dial(context.Background())
			if !slices.Equal(dialled, tc.want) {
				t.Errorf("dialled %v, want %v", dialled, tc.want)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("error %v: a port refused on every address is refused", err)
			}
		})
	}
}

// TestLocalhostReachesAnIPv4Listener: with the real dialer, a server on
// 127.0.0.1 answers the check of localhost.
func TestLocalhostReachesAnIPv4Listener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, err := newProbe("https://localhost:"+port+"/livez", "")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://localhost:" + port)
	c, err := dialServer(context.Background(), p.dialTCP, u)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
