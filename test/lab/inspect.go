package lab

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Addr is one address of an interface as `ip -j addr` shows it.
type Addr struct {
	Prefix    netip.Prefix
	Label     string
	Tentative bool
	NoDAD     bool
}

// Addrs lists the addresses of the host's eth0.
func (h *Host) Addrs() ([]Addr, error) { return h.AddrsOf("eth0") }

// AddrsOf lists the addresses of one of the host's interfaces.
func (h *Host) AddrsOf(dev string) ([]Addr, error) {
	out, err := h.Exec("ip", "-j", "addr", "show", "dev", dev)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return nil, nil // no interface, no address
	}
	if err != nil {
		return nil, err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Label     string `json:"label"`
			Tentative bool   `json:"tentative"`
			NoDAD     bool   `json:"nodad"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("parsing ip -j addr: %w", err)
	}
	var addrs []Addr
	for _, l := range links {
		for _, a := range l.AddrInfo {
			ip, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			addrs = append(addrs, Addr{Prefix: netip.PrefixFrom(ip, a.PrefixLen), Label: a.Label, Tentative: a.Tentative, NoDAD: a.NoDAD})
		}
	}
	return addrs, nil
}

// Has reports whether eth0 holds p (and returns its details).
func (h *Host) Has(p netip.Prefix) (Addr, bool, error) { return h.HasOn("eth0", p) }

// HasOn reports whether interface dev holds p (and returns its details).
func (h *Host) HasOn(dev string, p netip.Prefix) (Addr, bool, error) {
	addrs, err := h.AddrsOf(dev)
	for _, a := range addrs {
		if a.Prefix == p {
			return a, true, err
		}
	}
	return Addr{}, false, err
}

// Neighbor returns the link-layer address and state of ip in the host's
// neighbour table ("" when there is no entry).
func (h *Host) Neighbor(ip netip.Addr) (string, []string, error) {
	out, err := h.Exec("ip", "-j", "neigh", "show", ip.String(), "dev", "eth0")
	if err != nil {
		return "", nil, err
	}
	var entries []struct {
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		return "", nil, fmt.Errorf("parsing ip -j neigh: %w", err)
	}
	if len(entries) == 0 {
		return "", nil, nil
	}
	return entries[0].LLAddr, entries[0].State, nil
}

// SetNeighbor puts a STALE entry for ip with a wrong MAC, as a client that
// talked to an earlier holder has.
func (h *Host) SetNeighbor(ip netip.Addr, mac string) error {
	_, err := h.Exec("ip", "neigh", "replace", ip.String(), "lladdr", mac, "dev", "eth0", "nud", "stale")
	return err
}

// Dial opens a TCP connection from inside the host's namespace.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := InNetns(h.NS, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Whoami asks https://ip:port/whoami from the host and returns who answered.
func (h *Host) Whoami(ip netip.Addr, port int, timeout time.Duration) (string, error) {
	resp, err := h.Client(timeout).Get("https://" + net.JoinHostPort(ip.String(), strconv.Itoa(port)) + "/whoami")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Client is an HTTP client whose connections start inside the host's
// namespace: a fresh connection per request, lab certificates not verified.
func (h *Host) Client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return h.Dial(ctx, addr)
		},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // lab certificate
		DisableKeepAlives: true,
	}}
}

// Eventually calls cond every 20 ms until it returns nil or d passes, and
// returns the last error then.
func Eventually(d time.Duration, cond func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HTTPGet fetches a plain-HTTP URL from inside the host's namespace and
// returns the status code and body.
func (h *Host) HTTPGet(url string) (int, string, error) {
	resp, err := h.Client(5 * time.Second).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
