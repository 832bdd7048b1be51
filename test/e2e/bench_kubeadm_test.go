package e2e

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// BenchmarkKubeadm measures ours on a three-node kubeadm v1.34 cluster (real
// kubelet, containerd, kubeadm; L2 defaults, our static pod from `manifest
// pod`):
//
//   - kubeadm init on the first node → kubeadm's first call through the VIP
//     (one per cluster, so one trial per run);
//   - `kubeadm certs renew all` and the documented restart of the holder's
//     apiserver (manifest out and back, kubeadm's default: no shutdown
//     delay): failed requests and client outage, a client-go request every
//     10 ms through the VIP; next to keepalived as the kubeadm
//     high-availability guide sets it up (VIP 192.0.2.101, in the
//     apiservers' certificates) on the same nodes at the same time, each
//     tool's own holder restarted.
func BenchmarkKubeadm(b *testing.B) {
	needKeepalived(b)
	vipKA := netip.MustParsePrefix("192.0.2.101/32")
	k := newKubeLab(b, 3, lab.KubeOptions{CertSANs: []string{vipKA.Addr().String()}})
	quiet(k.Lab)
	const (
		rowInit    = "kubeadm, 3 real nodes: kubeadm init → its first call through the VIP, L2 defaults"
		rowFailed  = "kubeadm, certs renew + restart of the holder's apiserver (no shutdown delay), L2 defaults: failed requests"
		rowOutage  = "kubeadm, certs renew + restart of the holder's apiserver (no shutdown delay), L2 defaults: client outage"
		everyProbe = 10 * time.Millisecond
	)
	b.ResetTimer()
	for range b.N {
		tl := k.bootstrap(b, ourPodArgs)
		record(b, Row{Name: rowInit, Unit: "ms", Ours: durFigure([]time.Duration{tl.firstCall}),
			Note: fmt.Sprintf("our pod +%s, apiserver live +%s, VIP bound +%s, init done %s", tl.pod.Round(time.Millisecond),
				tl.live.Round(time.Millisecond), tl.bound.Round(time.Millisecond), tl.done.Round(time.Millisecond))})
		b.Logf("%s: ours %s", rowInit, tl.firstCall.Round(time.Millisecond))
		dir := b.TempDir()
		for i, n := range k.kc.Nodes {
			prio := 100
			if i == 0 {
				prio = 101
			}
			if _, err := n.StartKeepalived(dir, kubeadmKeepalived(62, vipKA, prio)); err != nil {
				b.Fatal(err)
			}
		}
		groups := []*realGroup{{tool: toolOurs, vip: vip4}, {tool: toolKeepalived + " (kubeadm guide)", vip: vipKA}}
		for _, g := range groups {
			var err error
			if g.probe, err = k.kc.StartProbe(k.client, 3*time.Hour, everyProbe, "-server", "https://"+netip.AddrPortFrom(g.vip.Addr(), 6443).String()); err != nil {
				b.Fatal(err)
			}
			if err := lab.Eventually(2*time.Minute, g.clientSettled); err != nil {
				b.Fatal(err)
			}
		}
		failed, outage := map[string][]float64{}, map[string][]time.Duration{}
		for trial := range rollingTrials() {
			for _, g := range groups {
				h, err := g.holderAmong(k.hosts)
				if err != nil {
					b.Fatal(err)
				}
				if out, err := k.kc.Nodes[h].Run("kubeadm", "certs", "renew", "all"); err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				from := time.Now()
				if err := k.restartAPIServerPod(h); err != nil {
					b.Fatal(err)
				}
				if err := lab.Eventually(3*time.Minute, func() error {
					if !k.kc.APIServerLive(h) {
						return fmt.Errorf("%s's apiserver not live", k.kc.Nodes[h].Name)
					}
					for _, g := range groups {
						if err := g.clientSettled(); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				ss := lab.Samples(g.probe)
				_, n, _ := lab.RequestCounts(ss, from, time.Now())
				d := lab.FailedSpan(ss, from, time.Now())
				failed[g.tool], outage[g.tool] = append(failed[g.tool], float64(n)), append(outage[g.tool], d)
				b.Logf("trial %d, %s: holder %s restarted, %d failed requests, outage %s", trial+1, g.tool, k.kc.Nodes[h].Name, n, d.Round(time.Millisecond))
			}
		}
		recordReal(b, rowFailed, "requests", groups, func(tool string) Figure { return countFigure(failed[tool]) })
		recordReal(b, rowOutage, "ms", groups, func(tool string) Figure { return durFigure(outage[tool]) })
	}
}
