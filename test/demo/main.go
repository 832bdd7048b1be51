// Command demo runs novaedge-cpvip's main job in namespace labs and narrates
// it. L2 mode: three control-plane nodes with stand-in kube-apiservers and a
// client on one switch; VRRP elects one holder of the dual-stack VIP, and the
// VIP follows the healthy nodes through an apiserver failure, a cut cable and
// a graceful stop while the client is answered all along. BGP mode: the same
// nodes behind an FRR router announce the VIP; the router spreads the
// client's connections and drops a node's route when it fails or stops.
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
	verbose := flag.Bool("v", false, "show the daemons' log lines too")
	real := flag.Bool("real", false, "on a real control plane (etcd + kube-apiserver built by make realcp)")
	flag.Parse()
	if err := demo(*bin, *verbose, *real); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

var (
	vip4 = netip.MustParsePrefix("192.0.2.100/32")
	vip6 = netip.MustParsePrefix("2001:db8::100/128")
)

type world struct {
	start  time.Time
	lab    *lab.Lab
	nodes  []*lab.Host
	apis   []*lab.APIServer
	procs  []*lab.Process
	client *lab.Host
	bin    string
	probe  *lab.Process // the real client, on a real control plane
	env    []string     // KEY=VALUE pairs over the daemon's defaults
}

func (w *world) say(format string, args ...any) {
	fmt.Printf("[%5.1fs] %s\n", time.Since(w.start).Seconds(), fmt.Sprintf(format, args...))
}

func demo(bin string, verbose, real bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root for network namespaces: sudo make demo")
	}
	logf := func(string, ...any) {}
	if verbose {
		logf = func(f string, a ...any) { fmt.Printf("        | "+f+"\n", a...) }
	}
	if real {
		if err := realDemo(bin, logf); err != nil {
			return err
		}
		fmt.Println("Demo complete.")
		return nil
	}
	w := &world{start: time.Now(), bin: bin}
	l, err := lab.New(logf)
	if err != nil {
		return err
	}
	w.lab = l
	defer func() { l.Close(); w.say("Lab removed.") }()
	if err := w.build(); err != nil {
		return err
	}
	for _, step := range []func() error{w.elect, w.apiserverFails, w.failOpen, w.cableCut, w.gracefulStop, w.stopAll} {
		if err := step(); err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
	if err := bgpDemo(w, logf); err != nil {
		return err
	}
	w.say("Demo complete.")
	return nil
}

// addHosts adds the three nodes, with stand-in apiservers or none, and the client.
func (w *world) addHosts(standIn bool) error {
	for i := range 3 {
		h, err := w.lab.AddHost(fmt.Sprintf("n%d", i+1), netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(11 + i)}), 24),
			netip.MustParsePrefix(fmt.Sprintf("2001:db8::%x/64", 0x11+i)), true)
		if err != nil {
			return err
		}
		var api *lab.APIServer
		if standIn {
			if api, err = h.StartAPIServer(6443); err != nil {
				return err
			}
		}
		w.nodes, w.apis = append(w.nodes, h), append(w.apis, api)
	}
	c, err := w.lab.AddHost("client", netip.MustParsePrefix("192.0.2.2/24"), netip.MustParsePrefix("2001:db8::2/64"), false)
	w.client, w.procs = c, make([]*lab.Process, 3)
	return err
}

func (w *world) build() error {
	if err := w.addHosts(true); err != nil {
		return err
	}
	w.say("Lab up: control-plane nodes n1 n2 n3 (192.0.2.11-13) each with a stand-in kube-apiserver, and a client, on one switch.")
	for i := range w.nodes {
		if err := w.startNode(i); err != nil {
			return err
		}
	}
	w.say("novaedge-cpvip started on all three: VIP %s + %s, VRRP every 100ms, health checks every 100ms.", vip4, vip6)
	return nil
}

// startNode starts our daemon on node i.
func (w *world) startNode(i int) error {
	p, err := w.nodes[i].Start(w.nodes[i].Name, append([]string{
		"NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "," + vip6.String(),
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=100ms", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=100ms",
		"NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent",
	}, w.env...), w.bin, "run")
	w.procs[i] = p
	return err
}

func (w *world) elect() error {
	h, d, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("VRRP elected %s; it bound both VIPs (one election for both address families, %s after start of the wait).", w.nodes[h].Name, d)
	return w.reach()
}

func (w *world) apiserverFails() error {
	h, _, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("%s's kube-apiserver breaks: /livez answers 500.", w.nodes[h].Name)
	_ = w.apis[h].Set(lab.ServerError)
	next, d, err := w.waitHolder(h)
	if err != nil {
		return err
	}
	w.say("After 3 failed checks %s advertised the fail-open priority 1; healthy %s took both VIPs %s later.", w.nodes[h].Name, w.nodes[next].Name, d)
	if err := w.reach(); err != nil {
		return err
	}
	_ = w.apis[h].Set(lab.OK)
	w.say("%s's apiserver is repaired; it rejoins as backup and leaves the VIP where it is.", w.nodes[h].Name)
	return nil
}

// failOpen breaks every apiserver at once: the VIP stays where it is, then
// goes to the first node whose apiserver is repaired.
func (w *world) failOpen() error {
	h, _, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("Every kube-apiserver breaks at once (a failure all nodes share: etcd quorum lost, a bad token everywhere).")
	for _, a := range w.apis {
		_ = a.Set(lab.ServerError)
	}
	time.Sleep(3 * time.Second)
	h, _, err = w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("Fail open: %s keeps both VIPs although no node is healthy (its status says fail open IN FORCE); clients and operators keep the address.", w.nodes[h].Name)
	if err := w.reach(); err != nil {
		return err
	}
	fixed := (h + 1) % len(w.nodes)
	_ = w.apis[fixed].Set(lab.OK)
	next, d, err := w.waitHolder(h)
	if err != nil {
		return err
	}
	w.say("%s's apiserver is repaired: %s takes the VIPs %s later (within its skew time, PREEMPT or not).", w.nodes[fixed].Name, w.nodes[next].Name, d)
	for _, a := range w.apis {
		_ = a.Set(lab.OK)
	}
	return w.reach()
}

func (w *world) cableCut() error {
	h, _, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("Pulling %s's cable (its switch port goes down).", w.nodes[h].Name)
	_ = w.nodes[h].SetSwitchPort(false)
	start := time.Now()
	var next int
	err = lab.Eventually(10*time.Second, func() error {
		for i, n := range w.nodes {
			if _, ok, _ := n.Has(vip4); ok && i != h {
				next = i
				return nil
			}
		}
		return fmt.Errorf("no other holder")
	})
	if err != nil {
		return err
	}
	w.say("%s heard no advertisement for the master down interval and took over after %s.", w.nodes[next].Name, time.Since(start).Round(time.Millisecond))
	if err := w.reach(); err != nil {
		return err
	}
	_ = w.nodes[h].SetSwitchPort(true)
	h2, d, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("Cable back: the two masters met and settled on %s after %s; exactly one holder again.", w.nodes[h2].Name, d)
	return w.reach()
}

func (w *world) gracefulStop() error {
	h, _, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	w.say("systemctl stop on %s (SIGTERM).", w.nodes[h].Name)
	_ = w.procs[h].Signal(syscall.SIGTERM)
	next, d, err := w.waitHolder(h)
	if err != nil {
		return err
	}
	code, _ := w.procs[h].Wait(5 * time.Second)
	w.say("%s sent priority 0, released the VIP and exited with code %d; %s took over %s later.", w.nodes[h].Name, code, w.nodes[next].Name, d)
	if err := w.reach(); err != nil {
		return err
	}
	return w.startNode(h)
}

func (w *world) stopAll() error {
	for _, p := range w.procs {
		_ = p.Signal(syscall.SIGTERM)
	}
	for _, p := range w.procs {
		if code, err := p.Wait(5 * time.Second); err != nil || code != 0 {
			return fmt.Errorf("stop: exit %d %v", code, err)
		}
	}
	for _, n := range w.nodes {
		for _, p := range []netip.Prefix{vip4, vip6} {
			if _, ok, _ := n.Has(p); ok {
				return fmt.Errorf("%s still holds %s after stopping", n.Name, p)
			}
		}
	}
	w.say("All three stopped with exit code 0; no node holds the VIP any more.")
	return nil
}

// waitHolder waits until exactly one node other than not holds both VIPs.
func (w *world) waitHolder(not int) (int, time.Duration, error) {
	start, holder := time.Now(), -1
	err := lab.Eventually(time.Minute, func() error {
		holder = -1
		for _, p := range []netip.Prefix{vip4, vip6} {
			prev := holder
			var hs []int
			for i, n := range w.nodes {
				if _, ok, _ := n.Has(p); ok {
					hs = append(hs, i)
				}
			}
			if len(hs) != 1 || hs[0] == not || (prev >= 0 && hs[0] != prev) {
				return fmt.Errorf("holders of %s: %v", p, hs)
			}
			holder = hs[0]
		}
		return nil
	})
	return holder, time.Since(start).Round(time.Millisecond), err
}

func (w *world) reach() error {
	if w.probe != nil {
		if _, err := firstOK(w.probe, time.Now()); err != nil {
			return err
		}
		w.say("  client-go GET /api/v1/namespaces/kube-system through the VIP: ok")
		return nil
	}
	for _, vip := range []netip.Addr{vip4.Addr(), vip6.Addr()} {
		var who string
		err := lab.Eventually(5*time.Second, func() error {
			var err error
			who, err = w.client.Whoami(vip, 6443, time.Second)
			return err
		})
		if err != nil {
			return fmt.Errorf("client cannot reach %s: %w", vip, err)
		}
		w.say("  client -> https://%s/whoami through the VIP: answered by %s", netip.AddrPortFrom(vip, 6443), who)
	}
	return nil
}
