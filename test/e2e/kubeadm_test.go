package e2e

import (
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// every runs fn every d on a goroutine of its own until the returned stop
// (safe to call again; the test's cleanup calls it too) has waited for it.
func every(t testing.TB, d time.Duration, fn func(now time.Time)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(d):
			}
			fn(time.Now())
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit) }); <-done }
	t.Cleanup(stop)
	return stop
}

// bindMonitor samples, every 50 ms, which nodes hold the VIP and whether
// their apiservers answer: when each apiserver was first live, and any
// node that bound the VIP before that.
type bindMonitor struct {
	mu         sync.Mutex
	firstLive  map[int]time.Time
	bound      map[int]bool
	violations []string
	end        func()
}

func (k *kubeLab) monitorBinding(t testing.TB) *bindMonitor {
	m := &bindMonitor{firstLive: map[int]time.Time{}, bound: map[int]bool{}}
	m.end = every(t, 50*time.Millisecond, func(now time.Time) {
		for i, n := range k.kc.Nodes {
			_, bound, _ := n.HasOn(k.vipDev, vip4)
			live := k.kc.APIServerLive(i)
			m.mu.Lock()
			if live && m.firstLive[i].IsZero() {
				m.firstLive[i] = now
			}
			if bound && !m.bound[i] && m.firstLive[i].IsZero() {
				m.violations = append(m.violations, n.Name+" bound the VIP before its apiserver was live")
			}
			m.bound[i] = m.bound[i] || bound
			m.mu.Unlock()
		}
	})
	return m
}

// TestKubeadmL2 is the product's first job on real kubeadm, then what
// kubeadm users do to a running control plane, with a client counting
// failed requests through the VIP (a TLS request every 20 ms, 1 s timeout).
// Our static pod is in /etc/kubernetes/manifests, put there by the
// README's kubeadm quick start's commands run as they are written,
// before `kubeadm init --control-plane-endpoint VIP:6443 --upload-certs` on
// n1, then `kubeadm join VIP:6443 --control-plane` on n2 and n3 with
// discovery through the VIP, no preflight error ignored. The VIP is never
// bound on a node whose apiserver is not live, and never on two nodes.
func TestKubeadmL2(t *testing.T) {
	k := newKubeLab(t, 3, lab.KubeOptions{})
	k.readme = true
	k.bootstrap(t, ourPodArgs)
	probe, hm := k.watch(t)
	k.run(t, "least privilege as the kernel reports it", func(t *testing.T) { k.checkCredentials(t) })
	k.run(t, "a cluster's Prometheus scrapes the static pods", func(t *testing.T) { k.scrapedByPrometheus(t) })
	steady := k.steady(t)
	k.run(t, "certs renew and apiserver restart", func(t *testing.T) {
		h := k.waitHolder(t, time.Minute)
		k.renewAndRestart(t, probe, hm, h, "holder's apiserver restarted by the kubelet after kubeadm certs renew (manifest out and back, no shutdown delay)",
			cost{failed: 7, double: makeBeforeBreak, why: "the port closes, the refused check hands over at once: the handover skew (61 ms) and the neighbours' switch, 3-4 requests at 20 ms; the bench's p95 of 10 trials (11 at its 10 ms client) is 6 here, + 1"}, steady(h))
	})
	k.run(t, "kubeadm upgrade apply to the same version", func(t *testing.T) { k.upgradeApply(t, probe, hm, steady) })
	k.run(t, "systemctl restart kubelet", func(t *testing.T) { k.restartKubelet(t, probe, hm, steady) })
	k.run(t, "our pod removed", func(t *testing.T) {
		h := k.waitHolder(t, time.Minute)
		k.event(t, probe, hm, "our manifest removed from the holder (graceful handover)",
			cost{failed: 2, double: makeBeforeBreak, why: "make before break: the one request in flight as the neighbours switch MAC, + 1 for a connection opened in the same millisecond"}, func() {
				if err := k.kc.MoveManifest(h, "novaedge-cpvip", true); err != nil {
					t.Fatal(err)
				}
				if err := lab.Eventually(time.Minute, k.running(h, false)); err != nil {
					t.Fatal(err)
				}
			}, k.heldElsewhere(t, h))
		if err := k.kc.MoveManifest(h, "novaedge-cpvip", false); err != nil {
			t.Fatal(err)
		}
		if err := lab.Eventually(time.Minute, k.running(h, true)); err != nil {
			t.Fatal(err)
		}
	})
	k.run(t, "our container SIGKILLed", func(t *testing.T) {
		h := k.waitHolder(t, time.Minute)
		var restarted func() error
		k.event(t, probe, hm, "our container SIGKILLed on the holder, restarted by the kubelet",
			cost{failed: 0, double: 0, keep: h + 1, window: 5 * time.Second,
				why: "the kernel keeps the VIP while our daemon is dead and the restarted daemon resumes as master (docs/vrrp.md#resuming-after-a-kill): the VIP never leaves, no request can fail; watched 5 s, past the backups' master-down interval (3.6 s) and a resume that gives up"}, func() {
				var err error
				if restarted, err = k.kill(h, "novaedge-cpvip"); err != nil {
					t.Fatal(err)
				}
			}, all(func() error { return restarted() }, steady(h)))
	})
	k.run(t, "apiserver restart with shutdown-delay-duration", func(t *testing.T) {
		// As after editing apiServer.extraArgs; an operator goes node by
		// node, the test does all three at once (not measured: only the
		// restart after it is).
		restarted := make([]func() error, len(k.kc.Nodes))
		for i := range k.kc.Nodes {
			if err := k.kc.SetAPIServerFlag(i, "shutdown-delay-duration", "5s"); err != nil {
				t.Fatal(err)
			}
			restarted[i] = k.apiServerRestarted(i, steady(i))
		}
		if err := lab.Eventually(3*time.Minute, allPolled(restarted...)); err != nil {
			t.Fatal(err)
		}
		h := k.waitHolder(t, time.Minute)
		k.renewAndRestart(t, probe, hm, h, "holder's apiserver restarted by the kubelet after kubeadm certs renew, shutdown-delay-duration 5s",
			cost{failed: 2, double: makeBeforeBreak, why: "the drain hands over while the port still serves: 0-1 measured (a connection opened just as the VIP moved), + 1"}, steady(h))
	})
	k.run(t, "holder powered off and on", func(t *testing.T) { k.powerCycle(t, probe, hm, steady) })
	// A resigning master keeps the VIP 100 ms after its successor's first
	// advertisement (make before break, docs/vrrp.md): the sampler sees
	// that as a sample or two at a time; anything longer is a second holder.
	t.Logf("FIGURE kubeadm L2 whole test: two holders %s in all, %s at most at a time",
		hm.double(vip4, time.Time{}, time.Now()).Round(time.Millisecond), hm.longest(vip4).Round(time.Millisecond))
	if d := hm.longest(vip4); d > 300*time.Millisecond {
		t.Errorf("two nodes held the VIP at once for %s", d)
	}
}

// scrapedByPrometheus: a Prometheus off the nodes (on the client) scrapes
// every node's static pod at NODE-IP:9450, the pod's default, with the
// shipped alert rules, which stay silent; /status answers the node alone.
func (k *kubeLab) scrapedByPrometheus(t *testing.T) {
	bin := prometheusBinary(t)
	var targets []string
	for _, h := range k.hosts {
		targets = append(targets, h.IPv4.Addr().String()+":9450")
	}
	a := startAlertLab(t, bin, k.client, targets, `sum(novaedge_cpvip_vip_held)`, "1")
	from := time.Now()
	time.Sleep(10 * time.Second)
	a.quiet("kubeadm static pods, steady", from)
	for _, target := range targets {
		code, err := k.client.Exec("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://"+target+"/status")
		if err != nil || code != "403" {
			t.Errorf("/status at %s from off the node: %q %v, want 403", target, code, err)
		}
	}
}

// watch starts the client (a request through the VIP every 20 ms) and
// the holder sampler of an L2 test, and waits for the first answer.
func (k *kubeLab) watch(t testing.TB) (*lab.Process, *holderMonitor) {
	t.Helper()
	probe, err := k.kc.StartProbe(k.client, 20*time.Minute, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	hm := k.monitorHolders(t)
	if _, err := lab.FirstOK(probe, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	return probe, hm
}

// steady is a condition of node i: its apiserver serves again and one node
// holds the VIP.
func (k *kubeLab) steady(t testing.TB) func(i int) func() error {
	return func(i int) func() error {
		return func() error {
			if !k.kc.APIServerLive(i) {
				return fmt.Errorf("%s's apiserver not live", k.kc.Nodes[i].Name)
			}
			if h := k.holders(t); len(h) != 1 {
				return fmt.Errorf("holders %v", h)
			}
			return nil
		}
	}
}

// upgradeApply is `kubeadm upgrade apply` to the running version on the
// holder, as one measured event.
func (k *kubeLab) upgradeApply(t *testing.T, probe *lab.Process, hm *holderMonitor, steady func(int) func() error) {
	h := k.waitHolder(t, time.Minute)
	k.event(t, probe, hm, "kubeadm upgrade apply "+lab.KubeVersion+" (the running version) on the holder",
		cost{failed: 15, double: makeBeforeBreak, why: "after certs renew, kubeadm restarts the holder's etcd: its apiserver's requests wait and time out (1 s each) for the 7-10 s of the restart (docs/kubeadm.md#an-etcd-restart-on-the-holder); 15: +50 % for a slower etcd start on a loaded machine"}, func() {
			// kubeadm v1.34 runs its CoreDNS checks even with dns.disabled
			// and fails them when there is no CoreDNS (the lab builds
			// none): those two are the only checks ignored.
			// Both streams in one, in order: kubeadm says why it failed
			// on stderr, between the phases it prints on stdout.
			out, err := k.kc.Nodes[h].Run("sh", "-c", "exec kubeadm upgrade apply "+lab.KubeVersion+
				" --yes --v=2 --ignore-preflight-errors=CoreDNSUnsupportedPlugins,CoreDNSMigration 2>&1")
			if err != nil {
				pods, _ := k.kc.Client(k.client, "pods", "-ns", "kube-system", "-timeout", "5s")
				kubelet, _ := k.kc.Nodes[h].Run("journalctl", "-u", "kubelet", "-n", "40", "--no-pager")
				t.Fatalf("%v\nkubeadm upgrade apply said:\n%s\nkube-system pods:\n%s\nthe holder's kubelet, last lines:\n%s", err, out, pods, kubelet)
			}
			t.Logf("kubeadm upgrade apply, last lines:\n%s", tail(out, 30))
		}, steady(h))
}

// restartKubelet is `systemctl restart kubelet` on the holder: the static
// pods keep running through it, so nothing moves.
func (k *kubeLab) restartKubelet(t *testing.T, probe *lab.Process, hm *holderMonitor, steady func(int) func() error) {
	h := k.waitHolder(t, time.Minute)
	var pid int
	k.event(t, probe, hm, "systemctl restart kubelet on the holder",
		cost{failed: 0, keep: h + 1, window: 5 * time.Second, why: "a kubelet restart leaves the running containers alone: the apiserver serves and the VIP stays; watched 5 s, past the backups' master-down interval (3.6 s)"}, func() {
			pid, _ = k.kc.Nodes[h].MainPID("kubelet")
			if out, err := k.kc.Nodes[h].Run("systemctl", "restart", "kubelet"); err != nil {
				t.Fatalf("systemctl restart kubelet: %v\n%s", err, out)
			}
		}, all(func() error {
			if now, err := k.kc.Nodes[h].MainPID("kubelet"); err != nil || now == 0 || now == pid {
				return fmt.Errorf("kubelet not restarted yet (PID %d, was %d)", now, pid)
			}
			return nil
		}, steady(h)))
}

// powerCycle cuts the holder's power and boots it again, two measured
// events: systemd starts containerd, the kubelet and (the service) us.
func (k *kubeLab) powerCycle(t *testing.T, probe *lab.Process, hm *holderMonitor, steady func(int) func() error) {
	h := k.waitHolder(t, time.Minute)
	k.event(t, probe, hm, "holder powered off (every process killed, link down, kernel state lost)",
		cost{failed: 3, double: makeBeforeBreak, why: "the master-down interval at the 200 ms default (0.72 s; its host answers nothing, so the backups do not wait): the request in flight times out (1 s), 1 measured (3-4 at 1 s adverts); a second if the cut lands as one begins, + 1 for a loaded machine"},
		func() { k.powerOff(t, h) }, k.heldElsewhere(t, h))
	k.event(t, probe, hm, "the node powered on again (systemd starts the kubelet, which starts the static pods)",
		cost{failed: 1, double: makeBeforeBreak, why: "the node comes back as a backup and takes nothing: 0 measured; 1 for a request in flight on a loaded machine"},
		func() { k.powerOn(t, h) }, all(k.running(h, true), steady(h)))
}

// TestKubeadmSystemdL2 is TestKubeadmL2 with us as the systemd service
// (the .deb installed, the env file, `systemctl enable --now`) on every node
// before its kubeadm init or join, then what kubeadm users and systemd do
// to a running control plane — with spreading API connections on (issue
// 36: its drop-in, CAP_BPF), which the other kubeadm tests leave off.
func TestKubeadmSystemdL2(t *testing.T) {
	k := newKubeLab(t, 3, lab.KubeOptions{})
	// Spreading on (issue 36), with its drop-in: one list of every node's
	// address, the same file on each node.
	var backends []string
	for _, n := range k.kc.Nodes {
		backends = append(backends, n.IPv4.Addr().String())
	}
	k.asService(t, func(int) string {
		return "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "\nNOVAEDGE_CP_VIP_SPREAD=true\nNOVAEDGE_CP_VIP_SPREAD_BACKENDS=" + strings.Join(backends, ",") + "\n"
	})
	// + CAP_BPF (39) in the bounding set (dropped from the others once the
	// steering is attached), and the bpf and capset system calls:
	// systemd-analyze counts them as @privileged allowed, 0.1 more
	// (docs/security.md).
	k.svc.dropIns, k.svc.caps, k.svc.exposure = []string{"spread.conf"}, "8000003000", 1.9
	installed := time.Now()
	k.bootstrap(t, nil)
	h := k.waitHolder(t, time.Minute)
	k.svc.waitJournal(t, h, installed, 30*time.Second, "Spreading new connections to the VIP over the apiservers", "backends=3")
	probe, hm := k.watch(t)
	k.run(t, "least privilege", func(t *testing.T) {
		for i := range k.kc.Nodes {
			k.svc.checkSandbox(t, i)
		}
	})
	steady := k.steady(t)
	k.run(t, "kubeadm upgrade apply to the same version", func(t *testing.T) { k.upgradeApply(t, probe, hm, steady) })
	k.run(t, "systemctl restart kubelet", func(t *testing.T) { k.restartKubelet(t, probe, hm, steady) })
	// Our own restarts under systemd, with the watches the proxy carries:
	// kept in systemd's descriptor store and adopted by the next run.
	k.run(t, "systemctl kill -s KILL novaedge-cpvip", func(t *testing.T) {
		k.keptAcross(t, probe, hm, steady, "our service SIGKILLed on the holder, restarted by systemd",
			"the kernel keeps the VIP while our daemon is dead and the restarted daemon resumes as master (docs/vrrp.md#resuming-after-a-kill)",
			func(h int) { k.svc.killHard(t, h) })
	})
	k.run(t, "systemctl restart novaedge-cpvip", func(t *testing.T) {
		k.keptAcross(t, probe, hm, steady, "systemctl restart novaedge-cpvip on the holder", restartWhy,
			func(h int) { k.svc.sh(t, h, "systemctl restart novaedge-cpvip") })
	})
	k.run(t, "apt install (upgrade) novaedge-cpvip", func(t *testing.T) {
		k.keptAcross(t, probe, hm, steady, "apt install of the newer package on the holder", restartWhy+" (the postinst's try-restart)",
			func(h int) { k.svc.upgrade(t, h) })
	})
	k.run(t, "holder powered off and on", func(t *testing.T) { k.powerCycle(t, probe, hm, steady) })
	t.Logf("FIGURE kubeadm systemd L2 whole test: two holders %s in all, %s at most at a time",
		hm.double(vip4, time.Time{}, time.Now()).Round(time.Millisecond), hm.longest(vip4).Round(time.Millisecond))
}

// keptAcross is one of our own restarts (do, on the holder) under systemd
// with spreading on: 30 long-lived connections through the VIP are all
// answered after it, the VIP never leaves the holder, new requests cost at
// most spreadKillCost, and the new run logs the adoption.
func (k *kubeLab) keptAcross(t *testing.T, probe *lab.Process, hm *holderMonitor, steady func(int) func() error, name, why string, do func(h int)) {
	t.Helper()
	h := k.waitHolder(t, time.Minute)
	watches := openLongLived(t, k.client, netip.AddrPortFrom(vip4.Addr(), 6443).String(), longLivedConns)
	at := time.Now()
	k.event(t, probe, hm, name, cost{failed: spreadKillCost, keep: h + 1, window: 5 * time.Second, why: why + "; spreading is on: " + spreadKillWhy},
		func() { do(h) }, steady(h))
	if n, err := watches.cut(t); n > 0 {
		k.failed.errorf(t, "%s: %d of %d long-lived connections through the VIP cut (%v): the next run adopts what systemd's descriptor store kept", name, n, longLivedConns, err)
	}
	k.svc.waitJournal(t, h, at, 10*time.Second, "Adopted the connections a previous run carried")
}

// all is a condition that holds when each of conds does, asked in order
// until one does not.
func all(conds ...func() error) func() error {
	return func() error {
		for _, c := range conds {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// allPolled is all with each of conds asked at every poll (a condition
// that must see a moment, as apiServerRestarted does, is never skipped).
func allPolled(conds ...func() error) func() error {
	return func() error {
		var errs []error
		for _, c := range conds {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
}

// renewAndRestart runs `kubeadm certs renew all` on node h and restarts its
// apiserver as the kubeadm docs say (manifest out of the directory until
// the pod is gone, then back) as one measured event.
func (k *kubeLab) renewAndRestart(t *testing.T, probe *lab.Process, hm *holderMonitor, h int, name string, c cost, steady func() error) {
	t.Helper()
	if err := k.renewCerts(h); err != nil {
		t.Fatal(err)
	}
	k.event(t, probe, hm, name, c, func() {
		if err := k.restartAPIServerPod(h); err != nil {
			t.Fatal(err)
		}
	}, steady)
}

// renewCerts runs `kubeadm certs renew all` on node h.
func (k *kubeLab) renewCerts(h int) error {
	if out, err := k.kc.Nodes[h].Run("kubeadm", "certs", "renew", "all"); err != nil {
		return fmt.Errorf("kubeadm certs renew all on %s: %w\n%s", k.kc.Nodes[h].Name, err, out)
	}
	return nil
}

// restartAPIServerPod moves node h's apiserver manifest out of the
// manifests directory, waits until the apiserver is down and moves it back.
func (k *kubeLab) restartAPIServerPod(h int) error {
	if err := k.kc.MoveManifest(h, "kube-apiserver", true); err != nil {
		return err
	}
	if err := lab.Eventually(time.Minute, func() error {
		if k.kc.APIServerLive(h) {
			return errors.New("still live")
		}
		return nil
	}); err != nil {
		return err
	}
	return k.kc.MoveManifest(h, "kube-apiserver", false)
}

// apiServerRestarted is a condition: node i's apiserver has been down since
// the condition was made and then steady again.
func (k *kubeLab) apiServerRestarted(i int, steady func() error) func() error {
	wasDown := false
	return func() error {
		if !wasDown {
			if wasDown = !k.kc.APIServerLive(i); !wasDown {
				return fmt.Errorf("%s's apiserver not restarted yet", k.kc.Nodes[i].Name)
			}
		}
		return steady()
	}
}

// bootstrap writes our pod on n1, runs kubeadm init there and joins the
// other nodes, each with our pod first, and checks the result through the
// VIP.
func (k *kubeLab) bootstrap(t testing.TB, podArgs func(node int) []string) initTimeline {
	t.Helper()
	k.runOurs(t, 0, podArgs)
	mon := k.monitorBinding(t)
	start := time.Now()
	init, err := k.kc.Init(0)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := init.Wait(5 * time.Minute); err != nil || code != 0 {
		t.Fatalf("kubeadm init: code %d, %v\n%s", code, err, tail(init.Output(), 40))
	}
	initDone := time.Since(start)
	pod := k.podLogTime(t, 0, "novaedge-cpvip", "Starting control-plane VIP manager")
	bound := k.podLogTime(t, 0, "novaedge-cpvip", "Control-plane VIP bound")
	k.podLogTime(t, 0, "novaedge-cpvip", "Verifying the API server's certificate")
	mon.mu.Lock()
	tl := initTimeline{pod: pod.Sub(start), live: mon.firstLive[0].Sub(start), bound: bound.Sub(start),
		firstCall: firstLineTime(init, "[upload-config]").Sub(start), done: initDone}
	mon.mu.Unlock()
	t.Logf("FIGURE kubeadm init timeline: our pod running +%s, apiserver live +%s, VIP bound +%s, kubeadm's first call through the VIP +%s, init done %s",
		tl.pod.Round(time.Millisecond), tl.live.Round(time.Millisecond), tl.bound.Round(time.Millisecond),
		tl.firstCall.Round(time.Millisecond), tl.done.Round(time.Millisecond))
	for i := 1; i < len(k.kc.Nodes); i++ {
		k.runOurs(t, i, podArgs)
		js := time.Now()
		join, err := k.kc.Join(i)
		if err != nil {
			t.Fatal(err)
		}
		if code, err := join.Wait(5 * time.Minute); err != nil || code != 0 {
			t.Fatalf("kubeadm join on %s: code %d, %v\n%s", k.kc.Nodes[i].Name, code, err, tail(join.Output(), 40))
		}
		t.Logf("FIGURE kubeadm join --control-plane on %s: %s", k.kc.Nodes[i].Name, time.Since(js).Round(time.Millisecond))
	}
	if err := lab.Eventually(3*time.Minute, func() error {
		out, err := k.kc.Client(k.client, "pods", "-ns", "kube-system", "-timeout", "5s")
		if err != nil {
			return err
		}
		running := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "novaedge-cpvip-") && strings.Contains(l, " Running true ") {
				running++
			}
		}
		if k.svc != nil { // the service: no pod of ours, the unit active on each node
			running = 0
			for _, n := range k.kc.Nodes {
				if active, _ := n.Run("systemctl", "is-active", "novaedge-cpvip"); strings.TrimSpace(active) == "active" {
					running++
				}
			}
		}
		if running != len(k.kc.Nodes) {
			return fmt.Errorf("ours running (mirror pods Running and ready, or the unit active): %d of %d\n%s", running, len(k.kc.Nodes), out)
		}
		t.Logf("kube-system pods through the VIP:\n%s", out)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Every kubelet reports its node Ready before the tests go on, as in a
	// cluster an operator would upgrade: kubeadm upgrade's preflight
	// refuses NotReady control-plane nodes, and a kubelet that joined
	// seconds ago may not have posted Ready yet.
	if err := lab.Eventually(3*time.Minute, k.nodesReady); err != nil {
		t.Fatal(err)
	}
	mon.end()
	for _, v := range mon.violations {
		t.Error(v)
	}
	return tl
}

// nodesReady says whether every node's Ready condition is true.
func (k *kubeLab) nodesReady() error {
	out, err := k.kc.Client(k.client, "nodes", "-timeout", "5s")
	if err != nil {
		return err
	}
	ready := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasSuffix(l, " true") {
			ready++
		}
	}
	if ready != len(k.kc.Nodes) {
		return fmt.Errorf("nodes Ready: %d of %d\n%s", ready, len(k.kc.Nodes), out)
	}
	return nil
}

// initTimeline is how long after kubeadm init started each step was done.
type initTimeline struct {
	pod, live, bound, firstCall, done time.Duration
}

// cost is what one event may cost at most, each bound with its reason (the
// mechanism it comes from and its margin): failed requests through the VIP
// (the probe sends one request at a time, every 20 ms, 1 s timeout) and, in
// L2, the longest stretch two nodes were seen holding the VIP; keep names
// the node from which the VIP must never leave (a state invariant: every
// sample of the event saw it there).
type cost struct {
	failed int           // failed requests, at most
	double time.Duration // L2: the longest stretch seen with two holders, at most
	keep   int           // L2: node index+1 that holds the VIP in every sample (0: none)
	window time.Duration // the event is watched at least this long from its start
	why    string
}

// makeBeforeBreak bounds one stretch with two holders in a handover: the
// resigning master keeps the VIP 100 ms after its successor's first
// advertisement (docs/vrrp.md), plus 200 ms for its timer and netlink
// delete to run on a loaded machine.
const makeBeforeBreak = 300 * time.Millisecond

// event runs what on the cluster, waits up to 6 minutes for settled, then 2 s
// more, logs the failed requests, the longest gap and (L2, hm not nil) the
// double holding in that window, and fails the test where they exceed c.
func (k *kubeLab) event(t *testing.T, probe *lab.Process, hm *holderMonitor, name string, c cost, what func(), settled func() error) {
	t.Helper()
	from := time.Now()
	what()
	if err := lab.Eventually(6*time.Minute, settled); err != nil { // a powered-on kubelet once took 2 min to start a static pod
		k.failed.fatalf(t, "%s: %v", name, err)
	}
	time.Sleep(max(2*time.Second, time.Until(from.Add(c.window))))
	to := time.Now()
	ss := lab.Samples(probe)
	ok, failed, firstErr := lab.RequestCounts(ss, from, to)
	double := ""
	if hm != nil {
		double = fmt.Sprintf(", two holders %s", hm.double(vip4, from, to).Round(time.Millisecond))
	}
	t.Logf("FIGURE kubeadm %s: %d failed of %d, outage %s%s (%s)", name, failed, ok+failed,
		lab.FailedSpan(ss, from, to).Round(time.Millisecond), double, firstErr)
	t.Logf("requests: %s", lab.RequestRuns(ss, from, to))
	if failed > c.failed {
		k.failed.errorf(t, "%s: %d failed requests, at most %d (%s)", name, failed, c.failed, c.why)
	}
	if hm == nil {
		return
	}
	if b := hm.blind(from, to); b > blindLimit {
		k.failed.errorf(t, "%s: the holder monitor kept no sample for %s: the VIP was not watched", name, b.Round(time.Millisecond))
	}
	for _, r := range hm.runs(vip4, from, to) {
		if r.d > c.double || c.double == 0 {
			k.failed.errorf(t, "%s: two nodes held the VIP at once for %s (%d samples), at most %s (%s)", name, r.d.Round(time.Millisecond), r.samples, c.double, c.why)
		}
	}
	if c.keep > 0 {
		if err := hm.left(vip4, c.keep-1, from, to); err != nil {
			k.failed.errorf(t, "%s: %v (%s)", name, err, c.why)
		}
	}
}

// podLogTime waits until the named pod's container log on node i has a
// line with part and returns the time the runtime stamped on it.
func (k *kubeLab) podLogTime(t testing.TB, i int, pod, part string) time.Time {
	t.Helper()
	var at time.Time
	if err := lab.Eventually(2*time.Minute, func() error {
		for _, l := range strings.Split(k.podLog(k.kc.Nodes[i], pod), "\n") {
			if !strings.Contains(l, part) {
				continue
			}
			ts, _, _ := strings.Cut(l, " ")
			var err error
			if at, err = time.Parse(time.RFC3339Nano, ts); err != nil { // the runtime's stamp, or journalctl's short-iso-precise
				at, err = time.Parse("2006-01-02T15:04:05.999999-0700", ts)
			}
			return err
		}
		return fmt.Errorf("no line with %q in %s's log on %s", part, pod, k.kc.Nodes[i].Name)
	}); err != nil {
		t.Fatal(err)
	}
	return at
}

func firstLineTime(p *lab.Process, part string) time.Time {
	i, err := p.WaitLine(time.Second, 0, part)
	if err != nil {
		return time.Time{}
	}
	return p.LineTime(i)
}

// holderMonitor samples every 20 ms which nodes hold each of its VIPs.
// Each sample reads every node by netlink (microseconds each); a sample
// whose reads failed or took longer than sampleSpread (the sampler
// descheduled on a loaded machine) cannot tell "at once" from "one after
// the other" and is left out. Its measures count only what samples saw:
// two holders from the first sample that saw them to the last, the overlap
// to within one sample's reads, which a loaded machine does not inflate;
// blind says how long it kept no sample.
type holderMonitor struct {
	mu      sync.Mutex
	samples []holderSample
}

type holderSample struct {
	at   time.Time
	held map[netip.Prefix]uint32 // which nodes hold each VIP: bit i for node i
}

func (s holderSample) n(vip netip.Prefix) int { return bits.OnesCount32(s.held[vip]) }

// monitorHolders samples the VIPs (vip4 if none given) on every node: one
// look at each node's interface per sample, whatever the number of VIPs.
func (k *kubeLab) monitorHolders(t testing.TB, vips ...netip.Prefix) *holderMonitor {
	if len(vips) == 0 {
		vips = []netip.Prefix{vip4}
	}
	hm := &holderMonitor{}
	every(t, 20*time.Millisecond, func(now time.Time) {
		held := map[netip.Prefix]uint32{}
		for i, node := range k.kc.Nodes {
			addrs, err := node.AddrsOf(k.vipDev)
			if err != nil {
				return // a node not read: the sample says nothing
			}
			for _, a := range addrs {
				if slices.Contains(vips, a.Prefix) {
					held[a.Prefix] |= 1 << i
				}
			}
		}
		if time.Since(now) > sampleSpread {
			return
		}
		hm.mu.Lock()
		hm.samples = append(hm.samples, holderSample{now, held})
		hm.mu.Unlock()
	})
	return hm
}

// stretch is a run of samples that saw two or more nodes holding a VIP:
// from its first sample to its last, and how many samples it had.
type stretch struct {
	d       time.Duration
	samples int
}

// runs are the stretches in [from, to) in which samples saw two or more
// nodes holding vip.
func (hm *holderMonitor) runs(vip netip.Prefix, from, to time.Time) []stretch {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	var out []stretch
	start, last := -1, -1
	for i, s := range hm.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		if s.n(vip) > 1 {
			if start < 0 {
				start = i
			}
			last = i
			continue
		}
		if start >= 0 {
			out = append(out, stretch{hm.samples[last].at.Sub(hm.samples[start].at), last - start + 1})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, stretch{hm.samples[last].at.Sub(hm.samples[start].at), last - start + 1})
	}
	return out
}

// blind is the longest time in [from, to) without a kept sample.
func (hm *holderMonitor) blind(from, to time.Time) time.Duration {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	var most time.Duration
	last := from
	for _, s := range hm.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		most, last = max(most, s.at.Sub(last)), s.at
	}
	return max(most, to.Sub(last))
}

// left returns an error naming the first sample in [from, to) that did not
// see node h hold vip, and how long the VIP was seen away from it.
func (hm *holderMonitor) left(vip netip.Prefix, h int, from, to time.Time) error {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	var first, last time.Time
	n := 0
	for _, s := range hm.samples {
		if s.at.Before(from) || !s.at.Before(to) || s.held[vip]&(1<<h) != 0 {
			continue
		}
		if n == 0 {
			first = s.at
		}
		last, n = s.at, n+1
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("the VIP left node %d: %d samples from +%s to +%s did not see it there",
		h+1, n, first.Sub(from).Round(time.Millisecond), last.Sub(from).Round(time.Millisecond))
}

// longest is the longest stretch two or more nodes were seen holding vip.
func (hm *holderMonitor) longest(vip netip.Prefix) time.Duration {
	var most time.Duration
	for _, r := range hm.runs(vip, time.Time{}, time.Now()) {
		most = max(most, r.d)
	}
	return most
}

// double is how long two or more nodes were seen holding vip in [from, to),
// all stretches.
func (hm *holderMonitor) double(vip netip.Prefix, from, to time.Time) time.Duration {
	var d time.Duration
	for _, r := range hm.runs(vip, from, to) {
		d += r.d
	}
	return d
}
