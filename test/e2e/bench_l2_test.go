package e2e

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/test/lab"
)

const toolKeepalived = "keepalived 2.2.7"

// toolOursUnchecked is our build with NOVAEDGE_CP_VIP_CONFLICT_CHECK=false.
const toolOursUnchecked = "novaedge-cpvip, conflict check off"

// failoverKind is one way a VIP holder fails in a trial: fail does it, heal
// undoes it once the client has recovered and returns when the group is
// steady again.
type failoverKind struct {
	name string
	fail func(c *cluster, h int) error
	heal func(c *cluster, g failoverGroup, h int) error
}

var (
	linkCut = failoverKind{name: "holder's link cut",
		fail: func(c *cluster, h int) error { return c.nodes[h].SetSwitchPort(false) },
		heal: func(c *cluster, g failoverGroup, h int) error {
			if err := c.nodes[h].SetSwitchPort(true); err != nil {
				return err
			}
			// The cut node left the election when its carrier went
			// (both tools: fault); it comes back as a backup.
			return g.waitOneHolder(c, g.advert*3/2)
		}}
	gracefulStop = failoverKind{name: "graceful stop of the holder",
		fail: func(c *cluster, h int) error { return c.procs[h].Signal(syscall.SIGTERM) },
		heal: func(c *cluster, g failoverGroup, h int) error {
			if _, err := c.procs[h].Wait(5 * time.Second); err != nil {
				return err
			}
			if err := c.restart(h); err != nil {
				return err
			}
			return g.waitOneHolder(c, 3*g.advert) // back as a backup
		}}
	apiserverDies = failoverKind{name: "holder's apiserver dies",
		fail: func(c *cluster, h int) error { return c.apis[h].Set(lab.Down) },
		heal: func(c *cluster, g failoverGroup, h int) error {
			if err := c.apis[h].Set(lab.OK); err != nil {
				return err
			}
			return g.waitOneHolder(c, 3*g.advert)
		}}
)

// l2Series is the trials of one failover kind on one group; its outages go
// into row next to the other tool's series of the same row.
type l2Series struct {
	row   string
	group failoverGroup
	kind  failoverKind
	out   []time.Duration
	probe []probe // the probes of the median trial, for the timeline
	fault time.Time
	// trials keeps every trial's probes until the median is known.
	trials []trialProbes
}

// BenchmarkL2Failover measures the outage a client sees (TCP connects to the
// VIP every 10 ms) when the VIP holder fails, for every L2 row at once: seven
// groups of three nodes on one switch, each group its own VRID and VIP, each
// running its trials at the same time as the others:
//
//   - ours and keepalived at advert 100 ms: link cut, then graceful stop
//   - ours and keepalived at advert 1 s: link cut
//   - ours, health 200 ms x 3 (advert 100 ms): apiserver dies
//   - ours at the defaults (health 1 s x 3, timeout 3 s, advert 1 s): apiserver dies
//   - ours at the build's defaults: link cut
//   - ours at advert 100 ms without the address conflict check: link cut,
//     then graceful stop (what the check costs, side by side)
//
// It writes bench/timeline.svg: the client's probes across the median trial
// of every series.
func BenchmarkL2Failover(b *testing.B) {
	needKeepalived(b)
	c := newCluster(b, 0)
	quiet(c.Lab)
	// Against keepalived at its rate: one advertisement an interval. Two
	// (our default) restart the backups' timer later on average (the last
	// advertisement is half a gap before a failure, not half an interval),
	// so a cut costs a quarter of an interval more: the price of 7 lost
	// advertisements in a row for a false takeover instead of 3, paid in
	// the defaults row.
	fast := []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=100ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=1"}
	slow := []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=1"}
	ours100 := c.addOurs(b, 51, 100*time.Millisecond, fast...)
	ka100 := c.addKeepaliveds(b, 52, 100*time.Millisecond)
	ours1s := c.addOurs(b, 53, time.Second, slow...)
	ka1s := c.addKeepaliveds(b, 54, time.Second)
	health200 := c.addOurs(b, 55, 100*time.Millisecond, "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=200ms",
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=200ms", "NOVAEDGE_CP_VIP_FAIL_THRESHOLD=3", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=100ms")
	defaults := c.addOurs(b, 56, time.Second, "NOVAEDGE_CP_VIP_HEALTH_INTERVAL=1s", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=3s",
		"NOVAEDGE_CP_VIP_FAIL_THRESHOLD=3", "NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s")
	// The same as ours100 without address conflict detection: what the
	// check costs a takeover, measured side by side.
	unchecked := c.addOurs(b, 57, 100*time.Millisecond, append(fast, "NOVAEDGE_CP_VIP_CONFLICT_CHECK=false")...)
	unchecked.tool = toolOursUnchecked
	// The build's defaults, whatever they are (the cluster's own are
	// 100 ms checks and advertisements).
	dflt := daemonDefaults(b)
	cutDefaults := c.addOurs(b, 58, dflt.AdvertInterval, "NOVAEDGE_CP_VIP_HEALTH_INTERVAL="+dflt.HealthInterval.String(),
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT="+dflt.HealthTimeout.String(), "NOVAEDGE_CP_VIP_ADVERT_INTERVAL="+dflt.AdvertInterval.String())
	groups := []failoverGroup{ours100, ka100, ours1s, ka1s, health200, defaults, unchecked, cutDefaults}
	c.startAll(b)
	for _, g := range groups {
		if err := g.waitOneHolder(c, 0); err != nil {
			b.Fatal(err)
		}
	}
	const (
		rowCut100  = "L2, holder's link cut, advert 100 ms: client-seen outage"
		rowCut1s   = "L2, holder's link cut, advert 1 s: client-seen outage"
		rowStop    = "L2, graceful stop of the holder, advert 100 ms: client-seen outage"
		rowAPI200  = "L2, holder's apiserver dies, health 200 ms x 3, advert 100 ms: client-seen outage"
		rowAPIDflt = "L2, holder's apiserver dies, defaults (health 1 s x 3, advert 1 s): client-seen outage"
		rowCutDflt = "L2, holder's link cut, the defaults: client-seen outage"
	)
	plan := [][]*l2Series{ // one list per group, run one after the other
		{{row: rowCut100, group: ours100, kind: linkCut}, {row: rowStop, group: ours100, kind: gracefulStop}},
		{{row: rowCut100, group: ka100, kind: linkCut}, {row: rowStop, group: ka100, kind: gracefulStop}},
		{{row: rowCut1s, group: ours1s, kind: linkCut}},
		{{row: rowCut1s, group: ka1s, kind: linkCut}},
		{{row: rowAPI200, group: health200, kind: apiserverDies}},
		{{row: rowAPIDflt, group: defaults, kind: apiserverDies}},
		{{row: rowCut100, group: unchecked, kind: linkCut}, {row: rowStop, group: unchecked, kind: gracefulStop}},
		{{row: rowCutDflt, group: cutDefaults, kind: linkCut}},
	}
	trials := benchTrials()
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for _, list := range plan {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, s := range list {
					if err := s.run(c, trials, b.Logf); err != nil {
						b.Errorf("%s, %s: %v", s.group.name, s.kind.name, err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	if b.Failed() {
		return
	}
	var all []*l2Series
	for _, list := range plan {
		all = append(all, list...)
	}
	for _, row := range []string{rowCut100, rowCut1s, rowStop, rowAPI200, rowAPIDflt, rowCutDflt} {
		r := Row{Name: row, Unit: "ms"}
		for _, s := range all {
			switch {
			case s.row != row:
			case s.group.tool == toolOurs:
				r.Ours = durFigure(s.out)
			default:
				r.Others = append(r.Others, Compared{Tool: s.group.tool, Figure: durFigure(s.out)})
			}
		}
		b.Logf("%s: ours %+v, others %+v", row, r.Ours, r.Others)
		record(b, r)
	}
	if err := writeTimeline(timelineFile, "Client TCP connects to the VIP every 10 ms across one failover", all); err != nil {
		b.Error(err)
	}
}

// daemonDefaults is the build's configuration with nothing set but a VIP.
func daemonDefaults(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.1/32"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// run does the series' trials and keeps the probes of its median trial.
func (s *l2Series) run(c *cluster, trials int, logf func(string, ...any)) error {
	for trial := range trials {
		mark := s.group.mark(c)
		d, probes, fault, err := s.trial(c)
		if err != nil {
			return fmt.Errorf("trial %d: %w", trial+1, err)
		}
		typical := s.typical()
		s.keep(d, probes, fault)
		logf("%s, %s, %s: trial %d outage %s", s.group.name, s.group.tool, s.kind.name, trial+1, d.Round(time.Millisecond))
		if typical > 0 && d > 2*typical {
			logf("%s, %s, %s: trial %d is an outlier (typical %s): the group's lines since the trial began:\n%s",
				s.group.name, s.group.tool, s.kind.name, trial+1, typical.Round(time.Millisecond), s.group.linesSince(c, mark))
		}
	}
	s.median()
	return nil
}

// typical is the median outage of the trials so far (0 before the third).
func (s *l2Series) typical() time.Duration {
	if len(s.out) < 3 {
		return 0
	}
	median, _ := stats(s.out)
	return median
}

// mark returns, per node of the group, its process and how many lines it
// had written: linesSince prints what came after (a chase of an outlier).
func (g failoverGroup) mark(c *cluster) map[int]logMark {
	m := map[int]logMark{}
	for _, i := range g.hosts {
		if p := c.procs[i]; p != nil {
			m[i] = logMark{p, p.Lines()}
		}
	}
	return m
}

type logMark struct {
	p     *lab.Process
	lines int
}

// linesSince returns the lines the group's processes wrote after mark,
// each prefixed with its node.
func (g failoverGroup) linesSince(c *cluster, since map[int]logMark) string {
	var b strings.Builder
	for _, i := range g.hosts {
		m, ok := since[i]
		if !ok {
			continue
		}
		for k := m.lines; k < m.p.Lines(); k++ {
			fmt.Fprintf(&b, "    %s: %s\n", c.nodes[i].Name, m.p.Line(k))
		}
	}
	return b.String()
}

// keep records one trial's outage and probes.
func (s *l2Series) keep(d time.Duration, probes []probe, fault time.Time) {
	s.out = append(s.out, d)
	s.trials = append(s.trials, trialProbes{probes, fault})
}

// median makes the probes of the median trial the series' timeline and returns the series.
func (s *l2Series) median() *l2Series {
	order := make([]int, len(s.out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(s.out[a], s.out[b]) })
	if len(order) > 0 {
		m := s.trials[order[(len(order)-1)/2]]
		s.probe, s.fault = m.probes, m.fault
	}
	return s
}

// trialProbes is one trial's probes and the time of its fault.
type trialProbes struct {
	probes []probe
	fault  time.Time
}

// trial fails the group's holder while the client probes the VIP, and
// returns the outage the client saw, its probes and when the fault began.
func (s *l2Series) trial(c *cluster) (time.Duration, []probe, time.Time, error) {
	g := s.group
	h, err := g.holder(c)
	if err != nil {
		return 0, nil, time.Time{}, err
	}
	p := startProber(c.client, netip.AddrPortFrom(g.vip.Addr(), 6443))
	err = lab.Eventually(20*time.Second, func() error { return p.steady(500 * time.Millisecond) })
	if err == nil {
		h, err = g.holder(c)
	}
	if err != nil {
		p.stop()
		return 0, nil, time.Time{}, err
	}
	// At a random phase of the holder's advertisements (and health checks):
	// right after a heal, their schedule would line up with the trial's.
	time.Sleep(rand.N(g.advert))
	fault := time.Now()
	if err := s.kind.fail(c, h); err != nil {
		p.stop()
		return 0, nil, fault, err
	}
	err = lab.Eventually(30*time.Second, func() error {
		if _, ok := p.outage(fault); !ok {
			return fmt.Errorf("the client has not recovered")
		}
		return nil
	})
	time.Sleep(time.Second) // the probes in flight end; the timeline shows the recovery
	probes := p.stopped()
	if err != nil {
		return 0, nil, fault, err
	}
	outage, _ := outageOf(probes, fault)
	return outage, probes, fault, s.kind.heal(c, g, h)
}

// addOurs adds a group of three of our nodes with VRID vrid and the VIP
// 192.0.2.(49+vrid) (100 for VRID 51), with env on top of the cluster's.
func (c *cluster) addOurs(b *testing.B, vrid int, advert time.Duration, env ...string) failoverGroup {
	b.Helper()
	g := failoverGroup{name: fmt.Sprintf("VRID %d", vrid), tool: toolOurs, advert: advert,
		vip: netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(49 + vrid)}), 32)}
	for k := range 3 {
		i := c.addNode(b, fmt.Sprintf("v%dn%d", vrid, k+1))
		c.procs = append(c.procs, nil)
		c.env[i] = append([]string{"NOVAEDGE_CP_VIP_ADDRESS=" + g.vip.String(), fmt.Sprintf("NOVAEDGE_CP_VIP_VRID=%d", vrid)}, env...)
		g.hosts = append(g.hosts, i)
	}
	return g
}

// addKeepaliveds adds a group of three keepalived nodes, like addOurs.
func (c *cluster) addKeepaliveds(b *testing.B, vrid int, advert time.Duration) failoverGroup {
	b.Helper()
	g := failoverGroup{name: fmt.Sprintf("VRID %d", vrid), tool: toolKeepalived, advert: advert,
		vip: netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(49 + vrid)}), 32)}
	for k := range 3 {
		i, _ := c.addKeepalived(b, fmt.Sprintf("v%dk%d", vrid, k+1), lab.Keepalived{VRID: vrid, Priority: 100,
			Advert: fmt.Sprintf("%g", advert.Seconds()), VIP: g.vip.String()})
		g.hosts = append(g.hosts, i)
	}
	return g
}

// waitOneHolder waits until exactly one of the group holds its VIP, then
// for hold longer (when it must stay so).
func (g failoverGroup) waitOneHolder(c *cluster, hold time.Duration) error {
	err := lab.Eventually(30*time.Second, func() error {
		n := 0
		for _, i := range g.hosts {
			if _, ok, err := c.nodes[i].Has(g.vip); err != nil {
				return err
			} else if ok {
				n++
			}
		}
		if n != 1 {
			time.Sleep(80 * time.Millisecond) // poll gently: other groups are measuring
			return fmt.Errorf("%s (%s): %d holders of %s", g.name, g.tool, n, g.vip)
		}
		return nil
	})
	time.Sleep(hold)
	return err
}
