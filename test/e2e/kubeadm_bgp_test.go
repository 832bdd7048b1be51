package e2e

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// bgpPodArgs are the `manifest pod` flags of node i in the kubeadm BGP
// test: BGP mode with BFD, AS 65002 to the router's AS 65001, the node's
// address as router id; our defaults otherwise.
func bgpPodArgs(i int) []string {
	return []string{"--mode", "bgp", "--vip-address", vip4.String(), "--bgp-local-as", "65002",
		"--bgp-router-id", nodeV4(i).String(), "--bgp-peers", routerV4.String() + "@65001", "--bfd"}
}

// routedVia is a condition: the router's kernel route to the VIP has
// exactly the nodes want (indexes) as ECMP next hops.
func (k *kubeLab) routedVia(want ...int) func() error {
	var hops []netip.Addr
	for _, i := range want {
		hops = append(hops, k.kc.Nodes[i].IPv4.Addr())
	}
	return k.router.RoutedVia(vip4, hops...)
}

// TestKubeadmBGP is TestKubeadmL2 in BGP mode: an FRR router (ECMP, BFD
// 300 ms x 3 as ours by default) peers with every node's static pod; the
// client reaches the VIP only through the router. kubeadm init and the
// joins go through the VIP as in L2 mode; then one node's apiserver is
// restarted by the kubelet without and with shutdown-delay-duration, our
// container is SIGKILLed, and a node is powered off and on, with the client
// counting failed requests.
func TestKubeadmBGP(t *testing.T) {
	k := newKubeBGPLab(t, 3, lab.KubeOptions{})
	var nodes []netip.Addr
	allNodes := make([]int, len(k.hosts))
	for i, h := range k.hosts {
		nodes, allNodes[i] = append(nodes, h.IPv4.Addr()), i
	}
	frr, err := k.router.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(routerV4, 65002, nodes, "", true), BFD: lab.BFDRouterConfig(300, 3)})
	if err != nil {
		t.Fatal(err)
	}
	k.bootstrap(t, bgpPodArgs)
	if err := lab.Eventually(time.Minute, k.routedVia(allNodes...)); err != nil {
		t.Fatal(err)
	}
	if err := lab.Eventually(time.Minute, func() error {
		peers, err := frr.BFDPeers()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if peers[n.String()].Status != "up" {
				return fmt.Errorf("router's BFD sessions: %+v", peers)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	probe, err := k.kc.StartProbe(k.client, 20*time.Minute, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.FirstOK(probe, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	steady := func(i int) func() error { // node i's apiserver serves again and every node is a next hop
		return func() error {
			if !k.kc.APIServerLive(i) {
				return fmt.Errorf("%s's apiserver not live", k.kc.Nodes[i].Name)
			}
			return k.routedVia(allNodes...)()
		}
	}
	k.run(t, "certs renew and apiserver restart", func(t *testing.T) {
		k.renewAndRestart(t, probe, nil, 0, "BGP: n1's apiserver restarted by the kubelet after kubeadm certs renew (no shutdown delay)",
			cost{failed: 6, why: "the refused check demotes n1's route at once; requests the router still sends n1 until then: 0-4 measured, + 2"}, steady(0))
	})
	k.run(t, "apiserver restart with shutdown-delay-duration", func(t *testing.T) {
		if err := k.kc.SetAPIServerFlag(0, "shutdown-delay-duration", "5s"); err != nil {
			t.Fatal(err)
		}
		if err := lab.Eventually(3*time.Minute, k.apiServerRestarted(0, steady(0))); err != nil {
			t.Fatal(err)
		}
		k.renewAndRestart(t, probe, nil, 0, "BGP: n1's apiserver restarted by the kubelet after kubeadm certs renew, shutdown-delay-duration 5s",
			cost{failed: 2, why: "the drain withdraws n1's route while its port still serves: 0-1 measured, + 1"}, steady(0))
	})
	k.run(t, "our container SIGKILLed", func(t *testing.T) {
		var restarted func() error
		k.event(t, probe, nil, "BGP: our container SIGKILLed on n2, restarted by the kubelet",
			cost{failed: 3, why: "n2's route leaves with its BGP session and comes back: connections ECMP re-hashes meanwhile, 0-2 measured, + 1"}, func() {
				var err error
				if restarted, err = k.kill(1, "novaedge-cpvip"); err != nil {
					t.Fatal(err)
				}
			}, all(func() error { return restarted() }, steady(1)))
	})
	k.run(t, "node powered off and on", func(t *testing.T) {
		k.event(t, probe, nil, "BGP: n3 powered off (every process killed, link down, kernel state lost)",
			cost{failed: 3, why: "BFD takes n3's route away in 0.9 s: a request in flight to it, 1 measured, + 2"},
			func() { k.powerOff(t, 2) }, k.routedVia(0, 1))
		k.event(t, probe, nil, "BGP: n3 powered on again (kubelet starts the static pods)",
			cost{failed: 1, why: "n3's route comes back only once its apiserver is healthy: 0 measured, + 1"},
			func() { k.powerOn(t, 2) }, steady(2))
	})
}
