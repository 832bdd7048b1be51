package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// Nothing outlives the daemon: a holder whose process is gone or does not
// run for longer than the backups wait for it (RESTART_WAIT) leaves no VIP
// bound beside the one the taker binds. The kernel is the dead man's switch:
// the VIP is bound with a lifetime the daemon renews (docs/vrrp.md,
// "When our daemon dies or hangs").

// maxTwoHolders is the longest two nodes may answer for the VIP when a
// holder's daemon is killed or frozen for long: the lifetime lapses before
// the backups' RESTART_WAIT ends, so a backup takes over once the host
// stopped answering (none expected); the bound leaves room for a sample
// that reads the two namespaces 20 ms apart and a loaded machine.
const maxTwoHolders = 300 * time.Millisecond

// TestKilledDaemonStaysDown: the holder's daemon SIGKILLed and not started
// again for 6 s (a crash loop's back-off), 30 s (a longer one) or at all.
// The VIP leaves its host before a backup binds it (never two holders past
// maxTwoHolders), one backup holds it, and a restarted daemon, finding the
// VIP gone, neither takes it back nor announces it: not one gratuitous
// ARP or unsolicited NA for the VIP leaves its host after the kill. On
// fb2b4e5's build the dead daemon's VIP stayed bound beside the taker's
// for as long as the daemon stayed down.
func TestKilledDaemonStaysDown(t *testing.T) {
	for _, down := range []time.Duration{6 * time.Second, 30 * time.Second, 0} {
		name := fmt.Sprintf("down %s", down)
		if down == 0 {
			name = "never restarted"
		}
		t.Run(name, func(t *testing.T) { killedStaysDown(t, down) })
	}
}

// killedStaysDown kills the holder's daemon and starts it again after
// down (0: never).
func killedStaysDown(t *testing.T, down time.Duration) {
	c := newCluster(t, 3, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32,2001:db8::100/128", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms")
	c.startAll(t)
	h := c.settledHolder(t, vip4, -1, 15*time.Second)
	mon := c.monitor(t, vip4)
	killed := time.Now()
	if err := c.procs[h].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = c.procs[h].Wait(5 * time.Second)
	wire, stopWire := capture(t, c.nodes[h], "arp or icmp6")
	next, took := c.waitHolder(t, vip4, h, 10*time.Second)
	t.Logf("%s holds the VIP %s after the kill", c.nodes[next].Name, took.Round(time.Millisecond))
	time.Sleep(time.Until(killed.Add(6 * time.Second)))
	if c.held(h, vip4) || c.held(h, vip6) {
		t.Errorf("the killed daemon's VIP is still bound on %s 6 s after the kill", c.nodes[h].Name)
	}
	away := c.watchAway(t, vip4, next)
	var p *lab.Process
	if down > 0 {
		time.Sleep(time.Until(killed.Add(down)))
		p = c.start(t, h)
	}
	time.Sleep(5 * time.Second)
	stopWire()
	n, first, blind := away()
	double, most := mon.stop()
	figure(t, fmt.Sprintf("our daemon SIGKILLed on the holder and down %s: longest double holding", down), double)
	switch {
	case most > 1 && double > maxTwoHolders:
		t.Errorf("two holders for %s (bound %s)", double, maxTwoHolders)
	case n > 0:
		t.Errorf("the VIP was not on %s alone in %d samples after it took over (the first %s after)", c.nodes[next].Name, n, first)
	case blind > blindLimit:
		t.Errorf("no sample kept for %s: the VIP was not watched", blind)
	}
	mac := c.nodes[h].MAC.String()
	// An announcement goes to every host (gratuitous ARP to broadcast,
	// unsolicited NA to ff02::1); the kernel's answers to the backups'
	// probes while the dead run's VIP had lifetime left are unicast.
	if sent := tshark(t, c.nodes[h], wire, fmt.Sprintf("eth.src == %s && ((arp.src.proto_ipv4 == 192.0.2.100 && arp.dst.proto_ipv4 == 192.0.2.100 && eth.dst == ff:ff:ff:ff:ff:ff) || (icmpv6.nd.na.target_address == 2001:db8::100 && ipv6.dst == ff02::1))", mac),
		"frame.time_relative", "arp.opcode", "icmpv6.type"); len(sent) > 0 {
		t.Errorf("%s announced the VIP %d times after its daemon was killed: %v", c.nodes[h].Name, len(sent), sent)
	}
	if p == nil {
		return
	}
	if i, err := p.WaitLine(0, 0, "resumed: the VIP was bound at start"); err == nil {
		t.Errorf("the restarted daemon resumed: %s", p.Line(i))
	}
}

// TestFrozenDaemon: the holder's daemon SIGSTOPped. For 1 s (shorter than
// the VIP's lifetime less a renewal period, 2.5 s at the defaults)
// nothing moves. For 10 s the VIP's lifetime lapses, a backup takes over
// without a second holder past maxTwoHolders, and on SIGCONT the thawed
// daemon steps back without taking the VIP again. On fb2b4e5's build the
// frozen daemon's VIP stayed bound beside the taker's for the whole freeze.
func TestFrozenDaemon(t *testing.T) {
	for _, tt := range []struct {
		freeze time.Duration
		moves  bool
	}{{time.Second, false}, {10 * time.Second, true}} {
		t.Run(fmt.Sprintf("frozen %s", tt.freeze), func(t *testing.T) {
			c := newCluster(t, 3, "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms")
			c.startAll(t)
			h := c.settledHolder(t, vip4, -1, 15*time.Second)
			mon := c.monitor(t, vip4)
			away := c.watchAway(t, vip4, h)
			if err := c.procs[h].Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tt.freeze)
			if err := c.procs[h].Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if !tt.moves {
				time.Sleep(2 * time.Second)
				if n, first, _ := away(); n > 0 {
					t.Errorf("the VIP left %s in %d samples (the first %s after the SIGSTOP)", c.nodes[h].Name, n, first)
				}
				mon.stop()
				return
			}
			away()
			next, _ := c.waitHolder(t, vip4, h, 5*time.Second)
			stays := c.watchAway(t, vip4, next)
			time.Sleep(3 * time.Second)
			n, first, _ := stays()
			double, most := mon.stop()
			figure(t, fmt.Sprintf("our daemon SIGSTOPped on the holder for %s: longest double holding", tt.freeze), double)
			if most > 1 && double > maxTwoHolders {
				t.Errorf("two holders for %s (bound %s)", double, maxTwoHolders)
			}
			if n > 0 {
				t.Errorf("after SIGCONT the VIP left %s in %d samples (the first %s after it): the thawed daemon took it back", c.nodes[next].Name, n, first)
			}
		})
	}
}

// TestVIPLifetimeRenewed: at the defaults the holder binds each VIP with a
// 3 s lifetime (`ip addr` shows it "dynamic") and renews it every 500 ms:
// 2 RTM_NEWADDR messages a second per VIP reach every netlink listener on
// the host. Counted over 10 s with `ip monitor address`: 20 per VIP
// expected, 16 to 22 accepted (renewals late on a loaded machine, the
// window's ends). A backup binds nothing and renews nothing.
func TestVIPLifetimeRenewed(t *testing.T) {
	c := newCluster(t, 2, "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms")
	c.startAll(t)
	h := c.settledHolder(t, vip4, -1, 15*time.Second)
	for _, p := range []netip.Prefix{vip4, vip6} {
		a, ok, err := c.nodes[h].Has(p)
		if err != nil || !ok || a.ValidLft < 1 || a.ValidLft > 3 {
			t.Fatalf("%s on %s: %+v (bound %v, %v): want a lifetime of at most 3 s", p, c.nodes[h].Name, a, ok, err)
		}
	}
	out, _ := c.nodes[h].Exec("ip", "addr", "show", "dev", "eth0")
	if !strings.Contains(out, "dynamic") {
		t.Errorf("ip addr does not show the VIP dynamic:\n%s", out)
	}
	var events [2]string
	done := make(chan struct{})
	for i, n := range []int{h, 1 - h} {
		go func() {
			events[i], _ = c.nodes[n].Exec("timeout", "10", "ip", "monitor", "address", "dev", "eth0")
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	for _, p := range []netip.Prefix{vip4, vip6} {
		n := strings.Count(events[0], " "+p.String()+" ")
		t.Logf("%s: %d RTM_NEWADDR in 10 s on the holder", p, n)
		if n < 16 || n > 22 {
			t.Errorf("%s renewed %d times in 10 s, want 16-22 (every 500 ms)\n%s", p, n, events[0])
		}
		if strings.Contains(events[1], " "+p.String()+" ") {
			t.Errorf("the backup's addresses changed:\n%s", events[1])
		}
	}
}

// TestKillRestartWithAConflictOnOneFamily: a dual-stack group whose IPv6
// VIP another host answers for (the holder binds IPv4 alone), the holder's
// daemon SIGKILLed and started again 1.5 s later. The backups ask whether
// the silent master's host still answers for the VIPs; the stranger's
// answer for IPv6 does not end their asking, the master's kernel answers
// for IPv4, and they wait (RESTART_WAIT). The restarted daemon finds the
// IPv4 VIP alone bound and resumes with it: the IPv4 VIP never leaves the
// holder. fb2b4e5's build fails it (the restarted daemon found not every
// VIP bound and released the one it had).
func TestKillRestartWithAConflictOnOneFamily(t *testing.T) {
	c := newCluster(t, 3, "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms")
	sq, err := c.AddHost("sq", mustPrefix("192.0.2.50/24"), mustPrefix("2001:db8::50/64"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sq.Exec("ip", "addr", "add", vip6.String(), "dev", "eth0", "nodad"); err != nil {
		t.Fatal(err)
	}
	c.startAll(t)
	h := c.settledHolder(t, vip4, -1, 15*time.Second)
	mon := c.monitor(t, vip4)
	for round := range 3 {
		h, _ = c.waitHolder(t, vip4, -1, 15*time.Second)
		time.Sleep(2 * time.Second) // the backups heard it long enough to know it as a member
		if c.held(h, vip6) {
			t.Fatalf("%s bound %s, which another host answers for", c.nodes[h].Name, vip6)
		}
		away := c.watchAway(t, vip4, h)
		killed := time.Now()
		if err := c.procs[h].Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = c.procs[h].Wait(5 * time.Second)
		time.Sleep(time.Until(killed.Add(1500 * time.Millisecond)))
		p := c.start(t, h)
		waitLine(t, p, 0, "resumed: the VIP was bound at start")
		time.Sleep(time.Until(killed.Add(5 * time.Second)))
		if n, first, blind := away(); n > 0 || blind > blindLimit {
			t.Errorf("round %d: the IPv4 VIP was not on %s alone in %d samples (the first %s after the kill; blind %s)",
				round+1, c.nodes[h].Name, n, first, blind)
		}
	}
	if double, most := mon.stop(); most > 1 {
		t.Errorf("two holders for %s", double)
	}
}
