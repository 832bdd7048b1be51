package main

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/agent"
	"github.com/novaedge/cpvip/internal/bfd"
	"github.com/novaedge/cpvip/internal/bgp"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/l2node"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/spread"
	"github.com/novaedge/cpvip/internal/status"
	"github.com/novaedge/cpvip/internal/vrrp"
)

// daemon is the wired daemon: the agent that runs it and the parts status reads.
type daemon struct {
	agent      *agent.Agent
	cfg        *config.Config
	checker    *health.Checker
	rec        *reconcile.Reconciler
	ifname     string
	vrrp       *vrrp.Elector    // l2
	l2         *l2node.Node     // l2
	guard      *acd.Guard       // l2 with conflict detection
	speaker    *bgp.Speaker     // bgp
	bgpElector *bgp.Elector     // bgp
	bgpAnn     *bgp.Announcer   // bgp
	bfd        *bfd.Manager     // bgp with BFD
	spread     *spread.Spreader // l2 with SPREAD
	journal    *status.Journal
	reloads    status.Reloads
	started    time.Time
	ready      atomic.Bool
}

// snapshot reads every part; it only observes.
func (d *daemon) snapshot() status.Snapshot {
	st := d.checker.Stats()
	s := status.Snapshot{
		Version: version, Mode: string(d.cfg.Mode), Interface: d.ifname, Started: d.started, Ready: d.ready.Load(),
		Health: status.Health{State: st.State.String(), URL: d.checker.URL(), LastStatus: st.Last.Status,
			Settled: st.Settled, LastReason: st.Last.Reason, LastDuration: st.Last.Duration,
			Checks: map[string]uint64{"success": st.Success, "failure": st.Failure}},
		Reconcile:    map[string]uint64{},
		Drops:        map[string]map[string]uint64{},
		SendFailures: map[string]uint64{},
		Reloads:      d.reloads.Counts(),
		Transitions:  d.journal.Recent(),
	}
	conflicts := map[netip.Addr]*status.Conflict{}
	if d.guard != nil {
		for _, c := range d.guard.Conflicts() {
			conflicts[c.VIP] = &status.Conflict{MAC: c.MAC.String(), Since: c.Since}
		}
		s.ConflictsDetected = d.guard.Detected.Load()
		s.ConflictsDefended = d.guard.Defended.Load()
	}
	for _, vip := range d.cfg.VIPAddress {
		s.VIPs = append(s.VIPs, status.VIP{Address: vip.String(), Held: d.rec.Held(vip), Conflict: conflicts[vip.Addr()]})
	}
	for a, n := range d.rec.Counts() {
		s.Reconcile[string(a)] = n
	}
	s.FailOpen.Enabled = d.cfg.FailOpen
	if d.vrrp != nil {
		s.FailOpen.InForce, s.FailOpen.Reason = d.vrrp.FailOpen()
		drops := map[string]uint64{}
		for _, in := range d.vrrp.Statuses() {
			s.FailOpen.Priority = in.Priority
			s.VRRP = append(s.VRRP, status.VRRP{VIP: in.VIP.String(), State: in.State.String(), Master: addrString(in.Master.String()),
				Primary: addrString(in.Primary.String()), Priority: in.Priority, Sent: in.Sent, Received: in.Received, Since: in.Changed, Reason: in.Reason,
				OtherGroups: otherGroups(in.Foreign, in.VIP.Addr().Is6())})
			for r, n := range in.Drops {
				drops[string(r)] += n
			}
			s.SendFailures["vrrp"] = in.SendErrors // one election: the same count for each VIP
		}
		s.Drops["vrrp"] = drops
		s.SendFailures["garp"] = d.l2.SendFailed.Load()
	}
	if d.spread != nil {
		s.SpreadActive = d.spread.Active()
		for _, b := range d.spread.Status() {
			s.Spread = append(s.Spread, status.SpreadBackend{Address: b.Addr.String(), Local: b.Local, Health: b.Health.String(),
				DialFailed: b.DialFailed, Active: b.Active, Connections: b.Connections, Adopted: b.Adopted, DialFailures: b.DialFailures})
		}
	}
	if d.bgpAnn != nil {
		s.SendFailures["bgp_route"] = d.bgpAnn.Failures.Load()
	}
	if d.bgpElector != nil {
		s.FailOpen.InForce, s.FailOpen.Reason = d.bgpElector.FailOpen()
	}
	if d.speaker != nil {
		for _, p := range d.speaker.Peers() {
			s.BGPPeers = append(s.BGPPeers, status.BGPPeer{Address: p.Address.String(), AS: p.AS, State: p.State, Since: p.Since, Reason: p.Reason})
		}
	}
	if d.bfd != nil {
		for _, b := range d.bfd.Sessions() {
			s.BFD = append(s.BFD, status.BFDSession{Peer: b.Peer.String(), State: b.State.String(), Diag: b.Diag.String(),
				RemoteDiag: b.RemoteDiag.String(), TxInterval: b.TxInterval, RxInterval: b.RxInterval, Since: b.Since})
		}
		drops := map[string]uint64{}
		for r, n := range d.bfd.Drops() {
			drops[string(r)] = n
		}
		s.Drops["bfd"] = drops
	}
	return s
}

// otherGroups lists the foreign groups heard in one address family (the
// instance hears both; each VIP's entry shows its family's).
func otherGroups(fs []vrrp.Foreign, v6 bool) []string {
	var out []string
	for _, f := range fs {
		if f.Source.Is6() == v6 {
			out = append(out, fmt.Sprintf("%s %v", f.Source, f.Addresses))
		}
	}
	return out
}

func addrString(s string) string {
	if s == "invalid IP" {
		return ""
	}
	return s
}
