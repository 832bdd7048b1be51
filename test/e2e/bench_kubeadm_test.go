package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// kubeadmFault is one kind of trial of BenchmarkKubeadm: what is done to the
// holder h of a group's VIP, and the tools it is measured for.
type kubeadmFault struct {
	row   string // the row's name, without the figure
	ours  bool   // measured for ours only (keepalived has no counterpart)
	fault func(k *kubeLab, h int) error
}

// kubeadmTrial is what one trial measured for one group.
type kubeadmTrial struct {
	failed         int
	outage, double time.Duration
}

// BenchmarkKubeadm measures ours on a three-node kubeadm v1.34 cluster (real
// kubelet, containerd, kubeadm; L2 defaults, our static pod from `manifest
// pod`), a client-go request every 10 ms through the VIP, next to
// keepalived as the kubeadm high-availability guide sets it up (VIP
// 192.0.2.101, in the apiservers' certificates) on the same nodes at the
// same time, each tool's own holder hit in turn:
//
//   - kubeadm init on the first node → kubeadm's first call through the VIP
//     (one per cluster, so one trial per run);
//   - `kubeadm certs renew all` and the documented restart of the holder's
//     apiserver (manifest out and back; kubeadm's default, no shutdown
//     delay);
//   - the holder's apiserver SIGKILLed (the kubelet restarts it);
//   - our own container SIGKILLed on the holder (the kubelet restarts it;
//     ours only: nothing restarts keepalived in its guide's setup).
//
// Each row: failed requests, client outage and, in the note, how long the
// 100 ms sampler saw the VIP on two nodes. The kubelet's crash-loop
// back-off is capped at 1 s so that every kill restarts as the first does.
func BenchmarkKubeadm(b *testing.B) {
	needKeepalived(b)
	vipKA := netip.MustParsePrefix("192.0.2.101/32")
	k := newKubeLab(b, 3, lab.KubeOptions{CertSANs: []string{vipKA.Addr().String()}, MaxRestartPeriod: time.Second})
	quiet(k.Lab)
	const rowInit = "kubeadm, 3 real nodes: kubeadm init → its first call through the VIP, L2 defaults"
	faults := []kubeadmFault{
		{row: "kubeadm, certs renew + restart of the holder's apiserver (no shutdown delay), L2 defaults", fault: (*kubeLab).renewAndRestartPod},
		{row: "kubeadm, holder's apiserver SIGKILLed, restarted by the kubelet, L2 defaults", fault: func(k *kubeLab, h int) error {
			return k.killRestarted(h, "kube-apiserver")
		}},
		{row: "kubeadm, our container SIGKILLed on the holder, restarted by the kubelet, L2 defaults", ours: true, fault: func(k *kubeLab, h int) error {
			return k.killRestarted(h, "novaedge-cpvip")
		}},
	}
	b.ResetTimer()
	for range b.N {
		tl := k.bootstrap(b, ourPodArgs)
		record(b, Row{Name: rowInit, Unit: "ms", Ours: durFigure([]time.Duration{tl.firstCall}),
			Note: fmt.Sprintf("our pod +%s, apiserver live +%s, VIP bound +%s, init done %s", tl.pod.Round(time.Millisecond),
				tl.live.Round(time.Millisecond), tl.bound.Round(time.Millisecond), tl.done.Round(time.Millisecond))})
		b.Logf("%s: ours %s", rowInit, tl.firstCall.Round(time.Millisecond))
		groups := k.startKeepalivedGroup(b, vipKA)
		hm := k.monitorHolders(b, vip4, vipKA)
		for _, f := range faults {
			if rowWanted(f.row) == 0 {
				continue
			}
			tools := groups
			if f.ours {
				tools = groups[:1]
			}
			results := map[string][]kubeadmTrial{}
			for trial := range max(1, benchTrials()/2) {
				for _, g := range tools {
					r, holder, err := k.kubeadmTrial(g, groups, hm, f.fault)
					if err != nil {
						b.Fatalf("%s, %s, trial %d: %v", f.row, g.tool, trial+1, err)
					}
					results[g.tool] = append(results[g.tool], r)
					b.Logf("%s, trial %d, %s: holder %s, %d failed requests, outage %s, two holders %s", f.row, trial+1, g.tool,
						holder, r.failed, r.outage.Round(time.Millisecond), r.double.Round(time.Millisecond))
				}
			}
			recordKubeadm(b, f.row, tools, results)
		}
	}
}

// startKeepalivedGroup starts keepalived on every node as the kubeadm guide
// does (n1 priority 101, the others 100) for vip, and a client probe for
// ours and for it; it returns both groups, ours first, once each client
// has been served for a second.
func (k *kubeLab) startKeepalivedGroup(b *testing.B, vip netip.Prefix) []*realGroup {
	dir := b.TempDir()
	for i, n := range k.kc.Nodes {
		prio := 100
		if i == 0 {
			prio = 101
		}
		if _, err := n.StartKeepalived(dir, kubeadmKeepalived(62, vip, prio)); err != nil {
			b.Fatal(err)
		}
	}
	groups := []*realGroup{{tool: toolOurs, vip: vip4}, {tool: toolKeepalived + " (kubeadm guide)", vip: vip}}
	for _, g := range groups {
		var err error
		if g.probe, err = k.kc.StartProbe(k.client, 3*time.Hour, 10*time.Millisecond, "-server", "https://"+netip.AddrPortFrom(g.vip.Addr(), 6443).String()); err != nil {
			b.Fatal(err)
		}
		if err := lab.Eventually(2*time.Minute, g.clientSettled); err != nil {
			b.Fatal(err)
		}
	}
	return groups
}

// kubeadmTrial hits g's holder with fault and waits until the cluster has
// settled: every apiserver live, our pod running on every node, every
// group's client served for a second.
func (k *kubeLab) kubeadmTrial(g *realGroup, groups []*realGroup, hm *holderMonitor, fault func(*kubeLab, int) error) (kubeadmTrial, string, error) {
	h, err := g.holderAmong(k.hosts)
	if err != nil {
		return kubeadmTrial{}, "", err
	}
	from := time.Now()
	if err := fault(k, h); err != nil {
		return kubeadmTrial{}, "", err
	}
	if err := lab.Eventually(3*time.Minute, func() error {
		for i, n := range k.kc.Nodes {
			if !k.kc.APIServerLive(i) {
				return fmt.Errorf("%s's apiserver not live", n.Name)
			}
			if err := k.running(i, true)(); err != nil {
				return err
			}
		}
		for _, g := range groups {
			if err := g.clientSettled(); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return kubeadmTrial{}, "", err
	}
	to := time.Now()
	ss := lab.Samples(g.probe)
	_, n, _ := lab.RequestCounts(ss, from, to)
	return kubeadmTrial{failed: n, outage: lab.FailedSpan(ss, from, to), double: hm.double(g.vip, from, to)}, k.kc.Nodes[h].Name, nil
}

// renewAndRestartPod is `kubeadm certs renew all` on node h and the
// documented restart of its apiserver.
func (k *kubeLab) renewAndRestartPod(h int) error {
	if err := k.renewCerts(h); err != nil {
		return err
	}
	return k.restartAPIServerPod(h)
}

// killRestarted SIGKILLs the named process on node h and waits until the
// kubelet has started a new one.
func (k *kubeLab) killRestarted(h int, name string) error {
	restarted, err := k.kill(h, name)
	if err != nil {
		return err
	}
	return lab.Eventually(2*time.Minute, restarted)
}

// recordKubeadm records a fault's two rows (failed requests, outage) with
// the double holding in the note.
func recordKubeadm(b *testing.B, row string, groups []*realGroup, results map[string][]kubeadmTrial) {
	pick := func(tool string, f func(kubeadmTrial) float64) []float64 {
		var xs []float64
		for _, r := range results[tool] {
			xs = append(xs, f(r))
		}
		return xs
	}
	failed := func(tool string) Figure {
		return countFigure(pick(tool, func(r kubeadmTrial) float64 { return float64(r.failed) }))
	}
	outage := func(tool string) Figure {
		var ds []time.Duration
		for _, r := range results[tool] {
			ds = append(ds, r.outage)
		}
		return durFigure(ds)
	}
	var note []string
	for _, g := range groups {
		double := pick(g.tool, func(r kubeadmTrial) float64 { return float64(r.double.Milliseconds()) })
		note = append(note, fmt.Sprintf("%s: two holders %.0f ms median, %.0f ms at most", g.tool, countFigure(double).Median, slices.Max(double)))
	}
	for _, r := range []struct {
		suffix, unit string
		fig          func(string) Figure
	}{{": failed requests", "requests", failed}, {": client outage", "ms", outage}} {
		row := Row{Name: row + r.suffix, Unit: r.unit, Ours: r.fig(groups[0].tool), Note: strings.Join(note, "; ")}
		for _, g := range groups[1:] {
			row.Others = append(row.Others, Compared{Tool: g.tool, Figure: r.fig(g.tool)})
		}
		b.Logf("%s: ours %+v, others %+v, %s", row.Name, row.Ours, row.Others, row.Note)
		record(b, row)
	}
}
