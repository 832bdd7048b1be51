package lab

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Addr is one address of an interface, as `ip addr` shows it.
type Addr struct {
	Prefix    netip.Prefix
	Label     string
	Tentative bool
	NoDAD     bool
	// ValidLft is the seconds left of its valid lifetime; 0: permanent.
	ValidLft int
}

// Addrs lists the addresses of the host's eth0.
func (h *Host) Addrs() ([]Addr, error) { return h.AddrsOf("eth0") }

// AddrsOf lists the addresses of one of the host's interfaces, read by
// netlink in the host's namespace: no process is started, so a sampler of
// several hosts reads them within microseconds of each other, loaded machine
// or not (`ip netns exec ip …` took hundreds of milliseconds per host under
// load, and a sampler saw two holders that never held at once).
func (h *Host) AddrsOf(dev string) ([]Addr, error) {
	ns, err := netns.GetFromPath("/run/netns/" + h.NS)
	if err != nil {
		return nil, fmt.Errorf("%s: namespace %s: %w", h.Name, h.NS, err)
	}
	defer ns.Close()
	nl, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("%s: netlink in %s: %w", h.Name, h.NS, err)
	}
	defer nl.Close()
	link, err := nl.LinkByName(dev)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil, nil // no interface, no address
	}
	if err != nil {
		return nil, fmt.Errorf("%s: link %s: %w", h.Name, dev, err)
	}
	// A dump that an address change interrupted (a failover, just what the
	// samplers watch) is read again.
	list, err := nl.AddrList(link, netlink.FAMILY_ALL)
	for try := 0; errors.Is(err, netlink.ErrDumpInterrupted) && try < 5; try++ {
		list, err = nl.AddrList(link, netlink.FAMILY_ALL)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: addresses of %s: %w", h.Name, dev, err)
	}
	var addrs []Addr
	for _, a := range list {
		if a.IPNet == nil {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ones, _ := a.Mask.Size()
		valid := a.ValidLft
		if uint32(valid) == math.MaxUint32 { // INFINITY_LIFE_TIME
			valid = 0
		}
		addrs = append(addrs, Addr{Prefix: netip.PrefixFrom(ip, ones), Label: a.Label,
			Tentative: a.Flags&unix.IFA_F_TENTATIVE != 0, NoDAD: a.Flags&unix.IFA_F_NODAD != 0, ValidLft: valid})
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
