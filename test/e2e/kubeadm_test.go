package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// bindMonitor samples, every 50 ms, which nodes hold the VIP and whether
// their apiservers answer, and remembers the first sample of each.
type bindMonitor struct {
	mu         sync.Mutex
	firstBound map[int]time.Time
	firstLive  map[int]time.Time
	violations []string
	stop       chan struct{}
	done       chan struct{}
}

func (k *kubeLab) monitorBinding(t testing.TB) *bindMonitor {
	m := &bindMonitor{firstBound: map[int]time.Time{}, firstLive: map[int]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			now := time.Now()
			for i, n := range k.kc.Nodes {
				_, bound, _ := n.Has(vip4)
				live := k.kc.APIServerLive(i)
				m.mu.Lock()
				if live && m.firstLive[i].IsZero() {
					m.firstLive[i] = now
				}
				if bound && m.firstBound[i].IsZero() {
					m.firstBound[i] = now
					if m.firstLive[i].IsZero() {
						m.violations = append(m.violations, n.Name+" bound the VIP before its apiserver was live")
					}
				}
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(m.end)
	return m
}

func (m *bindMonitor) end() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// TestKubeadmInitJoinL2 is the product's first job on real kubeadm: our
// static pod (from `manifest pod`) in /etc/kubernetes/manifests before
// `kubeadm init --control-plane-endpoint VIP:6443 --upload-certs` on n1,
// then `kubeadm join VIP:6443 --control-plane` on n2 and n3 with discovery
// through the VIP, no preflight error ignored. The VIP is never bound on a
// node whose apiserver is not live; kubectl through the VIP lists our three
// mirror pods Running.
func TestKubeadmInitJoinL2(t *testing.T) {
	k := newKubeLab(t, 3, lab.KubeOptions{})
	k.writeOurPod(t, 0, ourPodArgs...)
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
	first := firstLineTime(init, "[upload-config]")
	mon.mu.Lock()
	t.Logf("FIGURE kubeadm init timeline: our pod running +%s, apiserver live +%s, VIP bound +%s, kubeadm's first call through the VIP +%s, init done %s",
		pod.Sub(start).Round(time.Millisecond), mon.firstLive[0].Sub(start).Round(time.Millisecond),
		bound.Sub(start).Round(time.Millisecond), first.Sub(start).Round(time.Millisecond), initDone.Round(time.Millisecond))
	mon.mu.Unlock()

	for i := 1; i < 3; i++ {
		k.writeOurPod(t, i, ourPodArgs...)
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
		if running != 3 {
			return fmt.Errorf("our mirror pods Running and ready: %d of 3\n%s", running, out)
		}
		t.Logf("kube-system pods through the VIP:\n%s", out)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mon.end()
	for _, v := range mon.violations {
		t.Error(v)
	}
	if h := k.holders(t); len(h) != 1 {
		t.Errorf("holders %v, want one", h)
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
			at, err = time.Parse(time.RFC3339Nano, ts)
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
