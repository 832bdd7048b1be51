package lab

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Lab is a set of namespaces joined by one bridge.
type Lab struct {
	Prefix string
	Logf   func(format string, args ...any)

	sw    string
	mu    sync.Mutex
	hosts []*Host
	procs []*Process
	stops []func()
}

// New creates the switch namespace with bridge br0. Call Close when done.
func New(logf func(string, ...any)) (*Lab, error) {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	l := &Lab{Prefix: "cpv" + hex.EncodeToString(b), Logf: logf}
	l.sw = l.Prefix + "-sw"
	sweep(logf)
	if err := claim(l.Prefix); err != nil {
		return nil, fmt.Errorf("recording the lab's owner: %w", err)
	}
	if err := run("ip", "netns", "add", l.sw); err != nil {
		release(l.Prefix)
		return nil, err
	}
	for _, args := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"},
		{"ip", "link", "set", "br0", "up"},
	} {
		if err := l.exec(l.sw, args...); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Host is one namespace attached to the switch through its eth0.
type Host struct {
	Name string
	NS   string
	MAC  net.HardwareAddr
	IPv4 netip.Prefix
	IPv6 netip.Prefix
	lab  *Lab
	// cgroups: cgroup v1 directories every process started on the host
	// is born in (JoinCgroup).
	cgroups []string
}

// AddHost creates a host with the given addresses on eth0 (either may be the
// zero Prefix). dad=false turns IPv6 duplicate address detection off, for
// hosts such as the client whose own address must be usable at once.
func (l *Lab) AddHost(name string, v4, v6 netip.Prefix, dad bool) (*Host, error) {
	h := &Host{Name: name, NS: l.Prefix + "-" + name, IPv4: v4, IPv6: v6, lab: l}
	if err := run("ip", "netns", "add", h.NS); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.hosts = append(l.hosts, h)
	l.mu.Unlock()
	port := h.SwitchPort()
	acceptDAD := "0"
	if dad {
		acceptDAD = "1"
	}
	steps := [][]string{
		{h.NS, "ip", "link", "set", "lo", "up"},
		{h.NS, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=" + acceptDAD, "net.ipv6.conf.all.accept_dad=" + acceptDAD},
		{l.sw, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{l.sw, "ip", "link", "set", port, "master", "br0", "up"},
		{h.NS, "ip", "link", "set", "eth0", "up"},
	}
	if v4.IsValid() {
		steps = append(steps, []string{h.NS, "ip", "addr", "add", v4.String(), "dev", "eth0"})
	}
	if v6.IsValid() {
		steps = append(steps, []string{h.NS, "ip", "-6", "addr", "add", v6.String(), "dev", "eth0", "nodad"})
	}
	for _, s := range steps {
		if err := l.exec(s[0], s[1:]...); err != nil {
			return nil, err
		}
	}
	err := InNetns(h.NS, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			h.MAC = ifi.HardwareAddr
		}
		return err
	})
	return h, err
}

// Exec runs a command in the host's namespace and returns its standard
// output; standard error goes into the error when it fails.
func (h *Host) Exec(args ...string) (string, error) {
	return output(exec.Command("ip", append([]string{"netns", "exec", h.NS}, args...)...), h.Name, args)
}

// output runs cmd (args on host, after what enters its namespaces) and
// returns its standard output; standard error goes into the error when it
// fails.
func output(cmd *exec.Cmd, host string, args []string) (string, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %w: %s", strings.Join(args, " "), host, err, stderr.String())
	}
	return string(out), nil
}

// DeleteLink deletes the host's eth0 (its veth pair goes with it).
func (h *Host) DeleteLink() error {
	return h.lab.exec(h.lab.sw, "ip", "link", "del", h.SwitchPort())
}

// CreateLink creates the host's eth0 again, attached to the switch, with
// its addresses (as the OS network configuration would).
func (h *Host) CreateLink() error {
	l, port := h.lab, h.SwitchPort()
	steps := [][]string{
		{l.sw, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{l.sw, "ip", "link", "set", port, "master", "br0", "up"},
		{h.NS, "ip", "link", "set", "eth0", "up"},
	}
	if h.IPv4.IsValid() {
		steps = append(steps, []string{h.NS, "ip", "addr", "add", h.IPv4.String(), "dev", "eth0"})
	}
	if h.IPv6.IsValid() {
		steps = append(steps, []string{h.NS, "ip", "-6", "addr", "add", h.IPv6.String(), "dev", "eth0", "nodad"})
	}
	for _, s := range steps {
		if err := l.exec(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// SetSwitchPort sets the host's port on the switch up or down: the host's
// eth0 loses carrier, as when its cable is pulled.
func (h *Host) SetSwitchPort(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return h.lab.exec(h.lab.sw, "ip", "link", "set", h.SwitchPort(), state)
}

// SetLink sets the host's eth0 up or down.
func (h *Host) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	_, err := h.Exec("ip", "link", "set", "eth0", state)
	return err
}

func (l *Lab) exec(ns string, args ...string) error {
	return run("ip", append([]string{"netns", "exec", ns}, args...)...)
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// daemonDir makes a directory for a daemon's files, owned by user (which the
// daemon drops to) and removed with the lab. t.TempDir will not do: its
// parents are root-only.
func (l *Lab) daemonDir(kind, user string) (string, error) {
	dir, err := os.MkdirTemp("", l.Prefix+"-"+kind+"-")
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.stops = append(l.stops, func() { os.RemoveAll(dir) })
	l.mu.Unlock()
	if out, err := exec.Command("chown", user+":"+user, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("chown %s: %w: %s", dir, err, out)
	}
	return dir, nil
}

// Close ends the lab's processes and servers and deletes its namespaces.
func (l *Lab) Close() {
	l.mu.Lock()
	procs, stops, hosts := l.procs, l.stops, l.hosts
	l.procs, l.stops, l.hosts = nil, nil, nil
	l.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	for i := len(stops) - 1; i >= 0; i-- { // last registered first, as t.Cleanup
		stops[i]()
	}
	for _, h := range hosts {
		_ = run("ip", "netns", "del", h.NS)
	}
	_ = run("ip", "netns", "del", l.sw)
	release(l.Prefix)
}
