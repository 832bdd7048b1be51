// Command demo runs novaedge-cpvip's main job in a namespace lab and narrates
// it: a node with a stand-in kube-apiserver and a client on one switch; the
// VIP is bound, answers the client, is released when the apiserver fails,
// comes back, survives a manual delete, and is released on SIGTERM.
// Run it as root: sudo make demo.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

func main() {
	bin := flag.String("bin", "bin/novaedge-cpvip", "the novaedge-cpvip binary")
	verbose := flag.Bool("v", false, "show the daemon's log lines too")
	flag.Parse()
	if err := demo(*bin, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

var (
	vip4 = netip.MustParsePrefix("192.0.2.100/32")
	vip6 = netip.MustParsePrefix("2001:db8::100/128")
)

type narrator struct{ start time.Time }

func (n narrator) say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

func demo(bin string, verbose bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root for network namespaces: sudo make demo")
	}
	n := narrator{start: time.Now()}
	logf := func(string, ...any) {}
	if verbose {
		logf = func(f string, a ...any) { fmt.Printf("        | "+f+"\n", a...) }
	}
	l, err := lab.New(logf)
	if err != nil {
		return err
	}
	defer func() { l.Close(); n.say("Lab removed.") }()
	node, err := l.AddHost("n1", netip.MustParsePrefix("192.0.2.11/24"), netip.MustParsePrefix("2001:db8::11/64"), true)
	if err != nil {
		return err
	}
	client, err := l.AddHost("client", netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64"), false)
	if err != nil {
		return err
	}
	api, err := node.StartAPIServer(6443)
	if err != nil {
		return err
	}
	n.say("Lab up: node n1 (192.0.2.11, 2001:db8::11) with a stand-in kube-apiserver on :6443, a client (192.0.2.2) on the same switch.")
	d, err := node.Start("cpvip", []string{
		"NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "," + vip6.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=200ms", "NOVAEDGE_CP_VIP_FAIL_THRESHOLD=3",
		"NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent",
	}, bin, "run")
	if err != nil {
		return err
	}
	n.say("Started novaedge-cpvip on n1: VIP %s and %s, health check every 200ms, release after 3 failures.", vip4, vip6)

	if err := waitHeld(node, true, n, "VIP bound on n1 (eth0, found by itself)"); err != nil {
		return err
	}
	if err := reach(client, n); err != nil {
		return err
	}

	n.say("Breaking the apiserver: /livez now answers 500.")
	_ = api.Set(lab.ServerError)
	if err := waitHeld(node, false, n, "VIP released by n1"); err != nil {
		return err
	}
	if _, err := client.Whoami(vip4.Addr(), 6443, 700*time.Millisecond); err != nil {
		n.say("Client gets no answer through the VIP now, as it should: no node is healthy.")
	}

	n.say("Repairing the apiserver: /livez answers 200 again.")
	_ = api.Set(lab.OK)
	if err := waitHeld(node, true, n, "VIP bound again"); err != nil {
		return err
	}
	if err := reach(client, n); err != nil {
		return err
	}

	n.say("Someone deletes the IPv4 VIP by hand: ip addr del %s dev eth0", vip4)
	if _, err := node.Exec("ip", "addr", "del", vip4.String(), "dev", "eth0"); err != nil {
		return err
	}
	if err := waitHeld(node, true, n, "VIP restored by the reconcile loop"); err != nil {
		return err
	}

	n.say("Stopping novaedge-cpvip with SIGTERM.")
	stop := time.Now()
	_ = d.Signal(syscall.SIGTERM)
	code, err := d.Wait(5 * time.Second)
	if err != nil {
		return err
	}
	_, held4, _ := node.Has(vip4)
	_, held6, _ := node.Has(vip6)
	n.say("novaedge-cpvip exited with code %d after %s; VIP still bound: IPv4 %v, IPv6 %v.", code, time.Since(stop).Round(time.Millisecond), held4, held6)
	if code != 0 || held4 || held6 {
		return fmt.Errorf("shutdown left state behind")
	}
	n.say("Demo complete.")
	return nil
}

// waitHeld waits until both VIPs are (or are not) on n1 and says so.
func waitHeld(node *lab.Host, held bool, n narrator, msg string) error {
	start := time.Now()
	err := lab.Eventually(15*time.Second, func() error {
		for _, p := range []netip.Prefix{vip4, vip6} {
			if _, ok, err := node.Has(p); err != nil || ok != held {
				return fmt.Errorf("%s held=%v, want %v (%v)", p, ok, held, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	n.say("%s (after %s).", msg, time.Since(start).Round(time.Millisecond))
	return nil
}

func reach(client *lab.Host, n narrator) error {
	for _, vip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		var who string
		err := lab.Eventually(5*time.Second, func() error {
			var err error
			who, err = client.Whoami(vip, 6443, time.Second)
			return err
		})
		if err != nil {
			return fmt.Errorf("client cannot reach %s: %w", vip, err)
		}
		n.say("Client asked https://%s/whoami through the VIP: answered by %s.", netipHostPort(vip), who)
	}
	return nil
}

func netipHostPort(a netip.Addr) string { return netip.AddrPortFrom(a, 6443).String() }
