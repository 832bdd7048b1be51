package lab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FRR is Debian's FRR (zebra, bgpd, optionally bfdd) running in a host, with
// its own sockets and config under a directory of its own; nothing touches
// the machine's FRR.
type FRR struct {
	host    *Host
	dir     string
	daemons map[string]*Process
}

// FRRConfig is the configuration of each daemon; an empty BFD leaves bfdd out.
type FRRConfig struct {
	BGP string // bgpd.conf
	BFD string // bfdd.conf
}

// StartFRR starts zebra, then bfdd and bgpd, in the foreground.
func (h *Host) StartFRR(cfg FRRConfig) (*FRR, error) {
	dir, err := h.lab.daemonDir("frr", "frr")
	if err != nil {
		return nil, err
	}
	f := &FRR{host: h, dir: dir, daemons: map[string]*Process{}}
	files := map[string]string{"zebra.conf": "log stdout informational\n", "bgpd.conf": "log stdout informational\n" + cfg.BGP}
	if cfg.BFD != "" {
		level := "informational"
		if strings.Contains(cfg.BFD, "debug ") {
			level = "debugging" // FRR prints its debug lines only then
		}
		files["bfdd.conf"] = "log stdout " + level + "\n" + cfg.BFD
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	if out, err := exec.Command("chown", "-R", "frr:frr", dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("chown %s: %w: %s", dir, err, out)
	}
	if err := f.start("zebra"); err != nil {
		return nil, err
	}
	if err := waitFile(filepath.Join(dir, "zserv.api"), 10*time.Second); err != nil {
		return nil, fmt.Errorf("zebra in %s: %w", h.Name, err)
	}
	if cfg.BFD != "" {
		if err := f.start("bfdd"); err != nil {
			return nil, err
		}
	}
	return f, f.start("bgpd")
}

func (f *FRR) start(daemon string) error {
	args := []string{"/usr/lib/frr/" + daemon, "--vty_socket", f.dir, "-z", filepath.Join(f.dir, "zserv.api"), "-P", "0",
		"-i", filepath.Join(f.dir, daemon+".pid"), "-f", filepath.Join(f.dir, daemon+".conf")}
	if daemon == "bfdd" {
		args = append(args, "--bfdctl", filepath.Join(f.dir, "bfdd.sock"))
	}
	p, err := f.host.Start(f.host.Name+"-"+daemon, nil, args...)
	if err != nil {
		return err
	}
	f.daemons[daemon] = p
	return nil
}

// Restart kills a daemon (SIGKILL, as a crash) and starts it again.
func (f *FRR) Restart(daemon string) error {
	f.daemons[daemon].Kill()
	return f.start(daemon)
}

// Daemon returns a daemon's process (its output is its log).
func (f *FRR) Daemon(name string) *Process { return f.daemons[name] }

// Vtysh runs one show command and returns its output.
func (f *FRR) Vtysh(cmd string) (string, error) {
	return f.host.Exec("vtysh", "--vty_socket", f.dir, "-c", cmd)
}

// NextHops returns the next hops of the kernel route to p installed by FRR
// (sorted), or none when there is no such route.
func (f *FRR) NextHops(p netip.Prefix) ([]netip.Addr, error) {
	family := "ip"
	if p.Addr().Is6() {
		family = "ipv6"
	}
	out, err := f.Vtysh(fmt.Sprintf("show %s route %s json", family, p))
	if err != nil {
		return nil, err
	}
	var routes map[string][]struct {
		Installed bool `json:"installed"`
		Nexthops  []struct {
			IP     string `json:"ip"`
			Active bool   `json:"active"`
			FIB    bool   `json:"fib"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	var hops []netip.Addr
	for _, r := range routes[p.String()] {
		if !r.Installed {
			continue
		}
		for _, nh := range r.Nexthops {
			if a, err := netip.ParseAddr(nh.IP); err == nil && nh.FIB {
				hops = append(hops, a)
			}
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return slices.Compact(hops), nil
}

// KernelNextHops returns the next hops of the router's kernel route to p.
func (h *Host) KernelNextHops(p netip.Prefix) ([]netip.Addr, error) {
	family := "-4"
	if p.Addr().Is6() {
		family = "-6"
	}
	out, err := h.Exec("ip", "-j", family, "route", "show", p.String())
	if err != nil {
		return nil, err
	}
	var routes []struct {
		Gateway  string `json:"gateway"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	var hops []netip.Addr
	for _, r := range routes {
		gws := []string{r.Gateway}
		for _, nh := range r.Nexthops {
			gws = append(gws, nh.Gateway)
		}
		for _, g := range gws {
			if a, err := netip.ParseAddr(g); err == nil {
				hops = append(hops, a)
			}
		}
	}
	slices.SortFunc(hops, netip.Addr.Compare)
	return hops, nil
}

// RoutedVia is a condition for Eventually: the host's kernel route to p has
// exactly want (any order) as next hops.
func (h *Host) RoutedVia(p netip.Prefix, want ...netip.Addr) func() error {
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	return func() error {
		got, err := h.KernelNextHops(p)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s's kernel route to %s via %v, want %v", h.Name, p, got, want)
		}
		return nil
	}
}

// Established returns the neighbours FRR's bgpd has in Established.
func (f *FRR) Established() ([]netip.Addr, error) {
	out, err := f.Vtysh("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	var peers map[string]struct {
		State string `json:"bgpState"`
	}
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	var up []netip.Addr
	for addr, p := range peers {
		if a, err := netip.ParseAddr(addr); err == nil && p.State == "Established" {
			up = append(up, a)
		}
	}
	slices.SortFunc(up, netip.Addr.Compare)
	return up, nil
}

func waitFile(path string, d time.Duration) error {
	return Eventually(d, func() error {
		_, err := os.Stat(path)
		return err
	})
}

// BGPRouterConfig renders the router's bgpd.conf: AS 65001, every neighbour
// in peerAS, activated in its own address family with ECMP (maximum-paths 8),
// 3/9 s timers, connect retry 1 s, the MD5 password if set, and BFD with the
// profile "fast" (see BFDRouterConfig) when bfd is true.
func BGPRouterConfig(routerID netip.Addr, peerAS uint32, neighbors []netip.Addr, password string, bfd bool) string {
	as := map[netip.Addr]uint32{}
	for _, n := range neighbors {
		as[n] = peerAS
	}
	profile := map[netip.Addr]string{}
	for _, n := range neighbors {
		if bfd {
			profile[n] = "fast"
		}
	}
	return BGPRouterConfigAS(routerID, neighbors, as, password, profile)
}

// BGPRouterConfigAS is BGPRouterConfig with an AS per neighbour and, for the
// neighbours in bfdProfile, BFD with that bfdd profile.
func BGPRouterConfigAS(routerID netip.Addr, neighbors []netip.Addr, as map[netip.Addr]uint32, password string, bfdProfile map[netip.Addr]string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "router bgp 65001\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", routerID)
	for _, n := range neighbors {
		fmt.Fprintf(&s, " neighbor %s remote-as %d\n neighbor %s timers 3 9\n neighbor %s timers connect 1\n", n, as[n], n, n)
		if password != "" {
			fmt.Fprintf(&s, " neighbor %s password %s\n", n, password)
		}
		if p := bfdProfile[n]; p != "" {
			fmt.Fprintf(&s, " neighbor %s bfd\n neighbor %s bfd profile %s\n", n, n, p)
		}
	}
	for _, af := range []string{"ipv4", "ipv6"} {
		var active []netip.Addr
		for _, n := range neighbors {
			if n.Is6() == (af == "ipv6") {
				active = append(active, n)
			}
		}
		if len(active) == 0 {
			continue
		}
		fmt.Fprintf(&s, " address-family %s unicast\n  maximum-paths 8\n", af)
		for _, n := range active {
			fmt.Fprintf(&s, "  neighbor %s activate\n", n)
		}
		s.WriteString(" exit-address-family\n")
	}
	return s.String()
}

// IPv6OverIPv4 renders the bgpd.conf lines (inside "router bgp", after
// BGPRouterConfig's) that activate IPv6 unicast on IPv4 neighbours: MP-BGP,
// IPv6 routes over IPv4 sessions.
func IPv6OverIPv4(neighbors []netip.Addr) string {
	var s strings.Builder
	s.WriteString(" address-family ipv6 unicast\n  maximum-paths 8\n")
	for _, n := range neighbors {
		fmt.Fprintf(&s, "  neighbor %s activate\n", n)
	}
	s.WriteString(" exit-address-family\n")
	return s.String()
}

// BFDRouterConfig renders bfdd.conf: a profile "fast" with the interval in
// milliseconds and the multiplier; the sessions come from bgpd's "neighbor X
// bfd profile fast". FRR 8.4's bgpd registers each session with local
// 0.0.0.0, and when BGP is established deletes it and registers it again with
// the local address: every BFD peer sees one reset then.
func BFDRouterConfig(intervalMs, mult int) string {
	return "bfd\n" + BFDProfile("fast", intervalMs, mult) + "exit\n"
}

// BFDProfile renders one bfdd profile stanza (to go inside "bfd ... exit").
func BFDProfile(name string, intervalMs, mult int) string {
	return fmt.Sprintf(" profile %s\n  receive-interval %d\n  transmit-interval %d\n  detect-multiplier %d\n exit\n",
		name, intervalMs, intervalMs, mult)
}

// BFDPeer is what FRR's bfdd shows of a session.
type BFDPeer struct {
	Peer         string `json:"peer"`
	Status       string `json:"status"`
	Diagnostic   string `json:"diagnostic"`
	RemoteDiag   string `json:"remote-diagnostic"`
	RxInterval   int    `json:"receive-interval"`
	TxInterval   int    `json:"transmit-interval"`
	RemoteRx     int    `json:"remote-receive-interval"`
	RemoteTx     int    `json:"remote-transmit-interval"`
	RemoteDetect int    `json:"remote-detect-multiplier"`
	Uptime       int    `json:"uptime"`
	Downtime     int    `json:"downtime"`
}

// BFDPeers returns bfdd's sessions by peer address.
func (f *FRR) BFDPeers() (map[string]BFDPeer, error) {
	out, err := f.Vtysh("show bfd peers json")
	if err != nil {
		return nil, err
	}
	var peers []BFDPeer
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	m := map[string]BFDPeer{}
	for _, p := range peers {
		m[p.Peer] = p
	}
	return m, nil
}

// BFDDownEvents returns how often each session went down, by peer.
func (f *FRR) BFDDownEvents() (map[string]int, error) {
	out, err := f.Vtysh("show bfd peers counters json")
	if err != nil {
		return nil, err
	}
	var peers []struct {
		Peer string `json:"peer"`
		Down int    `json:"session-down-events"`
	}
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		return nil, fmt.Errorf("parsing %q: %w", out, err)
	}
	m := map[string]int{}
	for _, p := range peers {
		m[p.Peer] = p.Down
	}
	return m, nil
}

// BGPNodeConfig renders the bgpd.conf of an FRR node that does what ours
// does in BGP mode: AS 65002 announcing prefix to each router (AS 65001,
// timers 3 9) with BFD profile "fast". The prefix is announced whether or
// not it is in the RIB (no import check), as ours does.
func BGPNodeConfig(routerID netip.Addr, routers []netip.Addr, prefix netip.Prefix) string {
	var s strings.Builder
	fmt.Fprintf(&s, "router bgp 65002\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp network import-check\n no bgp default ipv4-unicast\n", routerID)
	for _, r := range routers {
		fmt.Fprintf(&s, " neighbor %s remote-as 65001\n neighbor %s timers 3 9\n neighbor %s bfd\n neighbor %s bfd profile fast\n", r, r, r, r)
	}
	fmt.Fprintf(&s, " address-family ipv4 unicast\n  network %s\n", prefix)
	for _, r := range routers {
		fmt.Fprintf(&s, "  neighbor %s activate\n", r)
	}
	s.WriteString(" exit-address-family\n")
	return s.String()
}
