package main

import (
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// realDemo narrates the L2 scenes on a real control plane: three nodes, each
// with an etcd member and a kube-apiserver v1.34 built from source, and a
// client-go client sending a request through the VIP every 10 ms.
func realDemo(bin string, logf func(string, ...any)) error {
	rb, err := lab.RealBinariesFromEnv()
	if err != nil {
		return err
	}
	w := &world{start: time.Now(), bin: bin, env: realEnv}
	l, err := lab.New(logf)
	if err != nil {
		return err
	}
	w.lab = l
	defer func() { l.Close(); w.say("Lab removed.") }()
	if err := w.addHosts(false); err != nil {
		return err
	}
	cp, err := lab.NewControlPlane(l, rb, w.nodes, []netip.Addr{vip4.Addr(), vip6.Addr()}, lab.APIServerOptions{})
	if err != nil {
		return err
	}
	w.say("Lab up: nodes n1 n2 n3 (192.0.2.11-13) and a client. Nothing runs yet: no etcd, no apiserver, no token.")
	for i := range w.nodes {
		if err := w.startNode(i); err != nil {
			return err
		}
	}
	w.say("novaedge-cpvip started first on all three, as on a kubeadm node before `kubeadm init`.")
	probe, err := cp.StartProbe(w.client, "https://"+vip4.Addr().String()+":6443", 10*time.Minute)
	if err != nil {
		return err
	}
	w.probe = probe
	time.Sleep(2 * time.Second)
	for _, n := range w.nodes {
		if _, ok, _ := n.Has(vip4); ok {
			return fmt.Errorf("%s holds the VIP before any apiserver exists", n.Name)
		}
	}
	w.say("2 s later: no node holds the VIP (no apiserver answers /livez).")
	if err := cp.Start(); err != nil {
		return err
	}
	started := time.Now()
	w.say("etcd (3 members) and kube-apiserver started on every node; /livez goes refused -> 403 -> 500 -> 200.")
	h, _, err := w.waitHolder(-1)
	if err != nil {
		return err
	}
	first, err := firstOK(probe, started)
	if err != nil {
		return err
	}
	w.say("%s bound the VIP once its /livez said 200; the client's first request through the VIP succeeded %s after the apiservers started.",
		w.nodes[h].Name, first.Sub(started).Round(time.Millisecond))

	killed := time.Now()
	w.say("SIGKILL to %s's kube-apiserver.", w.nodes[h].Name)
	if err := cp.SignalAPIServer(h, syscall.SIGKILL); err != nil {
		return err
	}
	next, d, err := w.waitHolder(h)
	if err != nil {
		return err
	}
	if _, err := firstOK(probe, time.Now()); err != nil {
		return err
	}
	ss := lab.Samples(probe)
	_, failed, _ := lab.RequestCounts(ss, killed, time.Now())
	w.say("%s took the VIP %s later; %d client requests failed, for %s.", w.nodes[next].Name, d, failed,
		lab.FailedSpan(ss, killed, time.Now()).Round(time.Millisecond))
	if err := cp.StartAPIServer(h); err != nil {
		return err
	}
	if err := cp.WaitLive(h, time.Minute); err != nil {
		return err
	}
	w.say("%s's apiserver restarted and live again; the VIP stays on %s.", w.nodes[h].Name, w.nodes[next].Name)

	h = next
	frozen := time.Now()
	w.say("%s's etcd member frozen (SIGSTOP): its apiserver's /livez hangs on the etcd check.", w.nodes[h].Name)
	if err := cp.SignalEtcd(h, syscall.SIGSTOP); err != nil {
		return err
	}
	if next, d, err = w.waitHolder(h); err != nil {
		return err
	}
	if _, err := firstOK(probe, time.Now()); err != nil {
		return err
	}
	ss = lab.Samples(probe)
	_, failed, _ = lab.RequestCounts(ss, frozen, time.Now())
	w.say("%s took the VIP %s later (3 checks timing out); %d client requests failed.", w.nodes[next].Name, d, failed)
	if err := cp.SignalEtcd(h, syscall.SIGCONT); err != nil {
		return err
	}
	w.say("etcd on %s resumed.", w.nodes[h].Name)
	time.Sleep(2 * time.Second)
	if err := w.gracefulStop(); err != nil {
		return err
	}
	time.Sleep(time.Second) // the restarted daemon is up before the final stop
	return w.stopAll()
}

// realEnv is the daemon's health settings against a real apiserver: a
// /livez answer on a loaded 2-core VM can take a few hundred milliseconds.
var realEnv = []string{"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=250ms", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=1s"}

// firstOK waits for the client's first successful request sent at or after
// from and returns when its answer came.
func firstOK(probe *lab.Process, from time.Time) (time.Time, error) {
	return lab.FirstOK(probe, from, 2*time.Minute)
}
