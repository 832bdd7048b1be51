package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/test/lab"
)

// The stress suite (make stress; a short smoke in make test): a real
// control plane (three nodes, each an etcd member and a kube-apiserver),
// several candidate settings side by side — each its own group of our
// daemons on the three nodes, with its own VRID, VIP and client — and one
// condition at a time on the holder (n1, priority 150 in every group; n2
// 100, n3 50) or the segment: what moves, what the clients see. A move while the old
// holder's apiserver answered a direct request within the client's timeout
// in the second before it is a false move.

// stressEnvSeconds sets each condition's length in seconds; unset, the
// suite runs as a smoke (stressSmoke per condition).
const stressEnvSeconds = "NOVAEDGE_STRESS_SECONDS"

const stressSmoke = 12 * time.Second

// stressEnvRun and stressEnvCandidates, when set, are regular expressions
// choosing the conditions and the candidate settings by name (make stress
// STRESS_RUN=… STRESS_CANDIDATES=…; an earlier build knows fewer settings).
const (
	stressEnvRun        = "NOVAEDGE_STRESS_RUN"
	stressEnvCandidates = "NOVAEDGE_STRESS_CANDIDATES"
)

// chosen says whether name matches the regular expression in env (unset: all).
func chosen(t *testing.T, env, name string) bool {
	v := os.Getenv(env)
	if v == "" {
		return true
	}
	re, err := regexp.Compile(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", env, v, err)
	}
	return re.MatchString(name)
}

// stressCandidate is one setting under test: the daemon's environment on
// top of the lab's.
type stressCandidate struct {
	name string
	env  []string
}

// stressCandidates: the settings of the release before (named in full, so
// the row stays what it was when the defaults change), one advertisement an
// interval as before issue 35, faster adverts sent once, twice and three
// times an interval, a shorter hung check, and the build's defaults.
var stressCandidates = []stressCandidate{
	{"advert 1 s, health 1 s x 3, timeout 3 s (0.1 defaults)", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s",
		"NOVAEDGE_CP_VIP_HEALTH_INTERVAL=1s", "NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=3s", "NOVAEDGE_CP_VIP_FAIL_THRESHOLD=3", "NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER=0"}},
	{"advert 1 s, once an interval", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=1s", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=1"}},
	{"advert 250 ms", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=250ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=1"}},
	{"advert 200 ms, 2 a interval", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=2"}},
	{"advert 200 ms, 3 a interval", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=3"}},
	{"advert 200 ms, 3 a interval, hung after 500 ms", []string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL=200ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL=3",
		"NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER=500ms"}},
	{"defaults", nil},
}

// stressGroup is one candidate's group: our daemon on every node.
type stressGroup struct {
	stressCandidate
	vip   netip.Prefix
	vrid  int
	procs []*lab.Process
	probe *lab.Process

	advert time.Duration // its advertisement interval

	mu        sync.Mutex
	excess    int  // moves beyond what a freeze allows (stressLab.freezes)
	holder    int  // the last single holder seen; -1 none yet
	restoring bool // the lab moves the VIP back to n1: not the condition's move
	moves     []stressMove
	double    time.Duration // the longest stretch of two holders
	doubles   int           // stretches of two holders
	dblAt     []time.Time   // when the first few began
	dblFrom   time.Time
}

// stressMove is the single holder changing.
type stressMove struct {
	at       time.Time
	from, to int
}

// stressLab is the control plane, the groups and the samplers.
type stressLab struct {
	*realCluster
	groups []*stressGroup
	direct []*lab.Process // a client straight to each node's apiserver
	per    time.Duration
	t      *testing.T
	tools  stressTools
	bins   []string // our daemon's program on each node, where not the shared one
}

// binary is our daemon's program on node i.
func (s *stressLab) binary(i int) string {
	if i < len(s.bins) {
		return s.bins[i]
	}
	return binary
}

// stressTools are the helper programs the conditions run, built before
// any condition's clock starts (a fresh machine fetches nfdelay's modules).
type stressTools struct{ nfdelay, memhog string }

// buildStressTools builds test/tools/nfdelay (a module of its own: its
// NFQUEUE library stays out of the daemon's) and test/tools/memhog.
func buildStressTools(t *testing.T) stressTools {
	dir := t.TempDir()
	tools := stressTools{nfdelay: filepath.Join(dir, "nfdelay"), memhog: filepath.Join(dir, "memhog")}
	for _, cmd := range []*exec.Cmd{
		exec.Command("go", "build", "-C", "../tools/nfdelay", "-o", tools.nfdelay, "."),
		exec.Command("go", "build", "-o", tools.memhog, "../tools/memhog"),
	} {
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	return tools
}

func newStressLab(t *testing.T) *stressLab {
	per := stressSmoke
	if v := os.Getenv(stressEnvSeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of seconds", stressEnvSeconds, v)
		}
		per = time.Duration(n) * time.Second
	}
	var cands []stressCandidate
	var vips []netip.Addr
	for k, cand := range stressCandidates {
		if chosen(t, stressEnvCandidates, cand.name) {
			cands = append(cands, cand)
			vips = append(vips, netip.AddrFrom4([4]byte{192, 0, 2, byte(110 + k)}))
		}
	}
	if len(cands) == 0 {
		t.Fatalf("%s chooses no candidate setting", stressEnvCandidates)
	}
	c := newRealClusterOf(t, 3, vips, lab.APIServerOptions{})
	quiet(c.Lab)
	s := &stressLab{realCluster: c, per: per, t: t, tools: buildStressTools(t)}
	// n1's processes are born in a memory cgroup of their own (no limit
	// until stressLab.squeeze sets one), so all they use is charged there.
	mem := s.cgroup(0, "memory")
	if err := os.Mkdir(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(mem) })
	c.nodes[0].JoinCgroup(mem)
	// n1 runs its own copies of the programs, read first by its processes:
	// their page cache is charged to its cgroup, as on a node of its own
	// (shared with the other nodes, it was charged to the test's, and
	// the memory condition could reclaim nothing of n1's).
	own := t.TempDir()
	bin0 := lab.RealBinaries{APIServer: filepath.Join(own, "kube-apiserver"), Etcd: filepath.Join(own, "etcd"), Client: c.cp.Bin.Client}
	s.bins = []string{filepath.Join(own, "novaedge-cpvip")}
	for src, dst := range map[string]string{c.cp.Bin.APIServer: bin0.APIServer, c.cp.Bin.Etcd: bin0.Etcd, binary: s.bins[0]} {
		if err := lab.CopyUncached(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	c.cp.UseBinaries(0, bin0)
	c.startControlPlane(t)
	for k, cand := range cands {
		g := &stressGroup{stressCandidate: cand, vip: netip.PrefixFrom(vips[k], 32), vrid: int(vips[k].As4()[3]) - 40, holder: -1}
		vars := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": g.vip.String()}
		for _, kv := range cand.env {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		cfg, err := config.LoadMap(vars)
		if err != nil {
			t.Fatalf("%s: %v", cand.name, err)
		}
		g.advert = cfg.AdvertInterval
		for i, n := range c.nodes {
			p, err := n.StartQuiet(fmt.Sprintf("%s-g%d", n.Name, k), s.env(g, i), s.binary(i), "run")
			if err != nil {
				t.Fatal(err)
			}
			g.procs = append(g.procs, p)
			if i == 0 { // n1 first: it holds every group's VIP
				time.Sleep(200 * time.Millisecond)
			}
		}
		s.groups = append(s.groups, g)
	}
	for _, g := range s.groups {
		var err error
		if g.probe, err = c.cp.StartProbe(c.client, "https://"+g.vip.Addr().String()+":6443", 3*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.nodes {
		p, err := c.cp.StartProbe(c.client, "https://"+n.IPv4.Addr().String()+":6443", 3*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s.direct = append(s.direct, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.sample(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if err := s.settle(time.Minute); err != nil {
		t.Fatal(err)
	}
	return s
}

// stressPriorities: n1 holds every group's VIP; n2 takes over before n3
// (a skew a fifth of an interval shorter): two equal backups may take over
// in the same millisecond, and the loser's moment would count as a move.
var stressPriorities = []string{"150", "100", "50"}

// env is group g's daemon's environment on node i.
func (s *stressLab) env(g *stressGroup, i int) []string {
	prio := stressPriorities[i]
	env := []string{"NOVAEDGE_CP_VIP_ADDRESS=" + g.vip.String(), "NOVAEDGE_CP_VIP_VRID=" + strconv.Itoa(g.vrid),
		"NOVAEDGE_CP_VIP_PRIORITY=" + prio, "NOVAEDGE_CP_VIP_METRICS_ADDR=", "NOVAEDGE_CP_VIP_LOG_LEVEL=info",
		"NOVAEDGE_CP_VIP_SA_TOKEN_PATH=" + s.token, "NOVAEDGE_CP_VIP_CA_FILE=" + s.cp.PKI.CAFile}
	return append(env, g.env...)
}

// sample reads every node's addresses every 10 ms and follows each
// group's holder.
func (s *stressLab) sample(ctx context.Context) {
	for ctx.Err() == nil {
		at := time.Now()
		held := make([]map[netip.Prefix]bool, len(s.nodes))
		ok := true
		for i, n := range s.nodes {
			addrs, err := n.Addrs()
			if err != nil {
				ok = false
				break
			}
			held[i] = map[netip.Prefix]bool{}
			for _, a := range addrs {
				held[i][a.Prefix] = true
			}
		}
		if ok && time.Since(at) <= sampleSpread {
			for _, g := range s.groups {
				var hs []int
				for i := range s.nodes {
					if held[i][g.vip] {
						hs = append(hs, i)
					}
				}
				g.observe(at, hs)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (g *stressGroup) observe(at time.Time, hs []int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case len(hs) > 1:
		if g.dblFrom.IsZero() {
			g.dblFrom = at
			g.doubles++
			if len(g.dblAt) < 3 {
				g.dblAt = append(g.dblAt, at)
			}
		}
		g.double = max(g.double, at.Sub(g.dblFrom))
	case len(hs) == 1:
		g.dblFrom = time.Time{}
		if hs[0] != g.holder {
			if g.holder >= 0 && !g.restoring {
				g.moves = append(g.moves, stressMove{at, g.holder, hs[0]})
			}
			g.holder = hs[0]
		}
	default:
		g.dblFrom = time.Time{}
	}
}

// reset forgets the moves and double holding seen so far.
func (g *stressGroup) reset() (holder int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.moves, g.double, g.doubles, g.dblAt, g.excess = nil, 0, 0, nil, 0
	return g.holder
}

// settle waits until every apiserver is live, every group's VIP is on n1
// alone and its client has succeeded for a second. A group whose VIP is
// elsewhere is brought back: its daemon on the holder is restarted (a
// graceful stop hands over to the strongest backup, n1).
func (s *stressLab) settle(within time.Duration) error {
	for i := range s.nodes {
		if err := s.cp.WaitLive(i, within); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(within)
	for _, g := range s.groups {
		for {
			hs, err := s.holders(g.vip)
			if err != nil {
				return err
			}
			if len(hs) == 1 && hs[0] == 0 {
				g.mu.Lock()
				g.restoring = false
				g.mu.Unlock()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: holders %v, not n1 alone", g.name, s.names(hs))
			}
			if len(hs) == 1 {
				g.mu.Lock()
				g.restoring = true
				g.mu.Unlock()
				if err := s.restart(g, hs[0]); err != nil {
					return err
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
		rg := realGroup{tool: g.name, vip: g.vip, probe: g.probe}
		if err := lab.Eventually(time.Until(deadline), rg.clientSettled); err != nil {
			return err
		}
	}
	return nil
}

// restart stops group g's daemon on node i gracefully and starts it again.
func (s *stressLab) restart(g *stressGroup, i int) error {
	p := g.procs[i]
	_ = p.Signal(syscall.SIGTERM)
	if _, err := p.Wait(10 * time.Second); err != nil {
		p.Kill()
	}
	n := s.nodes[i]
	np, err := n.StartQuiet(p.Name, s.env(g, i), s.binary(i), "run")
	if err != nil {
		return err
	}
	g.procs[i] = np
	return nil
}

// stressResult is one group's figures for one condition.
type stressResult struct {
	moves, falseMoves int
	failed, requests  int
	double            time.Duration // the longest stretch of two holders
	doubles           int           // stretches of two holders
	outage            time.Duration
	outageAt          time.Time // when the longest outage began
	// failedChecks: health checks failed on any node while it was healthy
	// (the ones logged at info: a node already unhealthy logs its failures
	// at debug; hung: of them, found hung), what stops short of a move
	// shows how near one came.
	failedChecks, hung int
	// waited: stalls the etcd watch called the network's (the check
	// waited on); hungWhy: what it saw of etcd at each hung check.
	waited  int
	hungWhy []string
}

// result reads group g's figures for the span [from, to].
func (s *stressLab) result(cond stressCondition, g *stressGroup, from, to time.Time) stressResult {
	g.mu.Lock()
	moves, double, doubles := append([]stressMove(nil), g.moves...), g.double, g.doubles
	g.mu.Unlock()
	r := stressResult{moves: len(moves), double: double, doubles: doubles}
	if cond.freeze > 0 {
		g.mu.Lock()
		r.falseMoves = g.excess
		g.mu.Unlock()
		moves = nil
	}
	for _, m := range moves {
		ok, _, _ := lab.RequestCounts(lab.Samples(s.direct[m.from]), m.at.Add(-time.Second), m.at)
		if ok > 0 {
			r.falseMoves++
			s.why(g, m)
		}
	}
	ss := lab.Samples(g.probe)
	ok, failed, _ := lab.RequestCounts(ss, from, to)
	r.failed, r.requests = failed, ok+failed
	r.outage, r.outageAt = longestOutage(ss, from, to)
	for _, p := range g.procs {
		for _, l := range p.LinesBetween(from, to) {
			if strings.Contains(l, `msg="Health check failed"`) {
				r.failedChecks++
				if strings.Contains(l, "while /livez/ping answered") {
					r.hung++
					if i := strings.LastIndex(l, "does not ("); i >= 0 {
						r.hungWhy = append(r.hungWhy, strings.SplitN(l[i+len("does not ("):], `)"`, 2)[0])
					}
				}
			}
			if strings.Contains(l, `msg="A check stalls while etcd's connections lose segments`) {
				r.waited++
			}
		}
	}
	return r
}

// why logs what the two nodes' daemons of group g said in the 3 s before
// move m and the second after it: the reason of a false move.
func (s *stressLab) why(g *stressGroup, m stressMove) {
	s.said(g, fmt.Sprintf("false move %s→%s at %s", s.nodes[m.from].Name, s.nodes[m.to].Name, m.at.Format("15:04:05.000")),
		m.at.Add(-3*time.Second), m.at.Add(time.Second), m.from, m.to)
}

// said logs what group g's daemons on nodes said in [from, to], about what.
func (s *stressLab) said(g *stressGroup, what string, from, to time.Time, nodes ...int) {
	for _, i := range nodes {
		s.t.Logf("%s, %s: %s said:\n%s", g.name, what, s.nodes[i].Name, strings.Join(g.procs[i].LinesBetween(from, to), "\n"))
	}
}

// longestOutage is the longest time from a failed request sent in [from,
// to) to the next success after it, and when it began.
func longestOutage(ss []lab.Sample, from, to time.Time) (longest time.Duration, at time.Time) {
	var failing time.Time
	for _, s := range ss {
		switch {
		case s.At.Before(from):
		case !s.OK && failing.IsZero() && s.At.Before(to):
			failing = s.At
		case s.OK && !failing.IsZero():
			if d := s.At.Sub(failing); d > longest {
				longest, at = d, failing
			}
			failing = time.Time{}
		}
	}
	return longest, at
}

func (r stressResult) String() string {
	return fmt.Sprintf("%d moves (%d false), %d of %d requests failed, longest outage %v, two holders %s, checks failed while healthy %d (hung %d), stalls waited on as the network's %d",
		r.moves, r.falseMoves, r.failed, r.requests, r.outage.Round(time.Millisecond), r.twoHolders(), r.failedChecks, r.hung, r.waited)
}

// twoHolders is how often two nodes held the VIP, and the longest time.
func (r stressResult) twoHolders() string {
	if r.doubles == 0 {
		return "never"
	}
	return fmt.Sprintf("%d× (longest %v)", r.doubles, r.double.Round(time.Millisecond))
}

// stressCondition is a condition applied for the lab's length: run applies
// it until ctx ends and undoes it before returning.
type stressCondition struct {
	name string
	// real: a failure the VIP must move for (a move is no false move).
	real bool
	// freeze: the condition freezes daemons this long (stressLab.freezes):
	// its false moves are those beyond what each freeze allows.
	freeze time.Duration
	// segmentLoss: every packet of the segment may be lost, etcd's too.
	segmentLoss bool
	run         func(ctx context.Context, s *stressLab) error
}

// guarded says whether a false move of group g in cond fails the test:
// a freeze never moves the VIP twice (no ping-pong) whatever the setting;
// at the defaults, a holder starved of CPU or memory or overloaded, a
// segment with jitter or loss of every packet, or advertisements lost
// keeps it. Loss of every packet was measured, not guarded, until a node
// took the VIP from a failing holder only once settled (issue 35: at 20 %
// the loss stalls etcd, whose peers share the segment, every node's checks
// flicker, and the VIP went to whichever passed last; 0 false moves in 10
// minutes since).
func guarded(cond stressCondition, g *stressGroup) bool {
	switch {
	case cond.real:
		return false
	case cond.freeze > 0:
		return true
	}
	return g.env == nil
}

// keepsAlone says whether group g must never have two holders in cond
// but for a handover's moment in each move (a false move fails guarded).
// Not under loss of every packet: the advertisements that end a stretch of
// two holders are lost too (20 %: 9 stretches for 7 moves in one 10-minute
// run at 2bb820c, each under 150 ms; 7 for 7 at 426dd5d, up to 328 ms).
func keepsAlone(cond stressCondition, g *stressGroup) bool {
	return guarded(cond, g) && cond.freeze == 0 && !cond.segmentLoss
}

// TestStress runs every condition in turn.
func TestStress(t *testing.T) {
	s := newStressLab(t)
	var table []string
	for _, cond := range stressConditions() {
		if !chosen(t, stressEnvRun, cond.name) {
			continue
		}
		for _, g := range s.groups {
			g.reset()
		}
		from := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), s.per)
		err := cond.run(ctx, s)
		cancel()
		to := time.Now()
		if err != nil {
			t.Errorf("%s: %v", cond.name, err)
		}
		time.Sleep(2 * time.Second) // what the condition's end still moves
		for _, g := range s.groups {
			r := s.result(cond, g, from, to.Add(2*time.Second))
			figure(t, fmt.Sprintf("stress %s, %s: %s; length", cond.name, g.name, r), to.Sub(from))
			for _, why := range r.hungWhy {
				t.Logf("%s, %s: a hung check, etcd seen: %s", cond.name, g.name, why)
			}
			if r.outage > time.Second {
				t.Logf("%s, %s: the client's requests: %s", cond.name, g.name, lab.RequestRuns(lab.Samples(g.probe), from, to.Add(2*time.Second)))
				if !cond.real {
					s.said(g, fmt.Sprintf("the longest outage (%v) from %s", r.outage.Round(time.Millisecond), r.outageAt.Format("15:04:05.000")),
						r.outageAt.Add(-3*time.Second), r.outageAt.Add(time.Second), 0, 1, 2)
				}
			}
			if !cond.real && cond.freeze == 0 {
				g.mu.Lock()
				dbl := append([]time.Time(nil), g.dblAt...)
				g.mu.Unlock()
				for _, at := range dbl {
					s.said(g, "two holders from "+at.Format("15:04:05.000"), at.Add(-2*time.Second), at.Add(time.Second), 0, 1, 2)
				}
			}
			if guarded(cond, g) && r.falseMoves > 0 {
				t.Errorf("%s, %s: %d false moves (%s)", cond.name, g.name, r.falseMoves, r)
			}
			if keepsAlone(cond, g) && r.doubles > r.moves {
				t.Errorf("%s, %s: two holders %s, not one handover's each (%s)", cond.name, g.name, r.twoHolders(), r)
			}
			falseMoves := strconv.Itoa(r.falseMoves)
			if cond.real {
				falseMoves = "—"
			}
			table = append(table, fmt.Sprintf("| %s | %s | %d | %s | %d of %d | %v | %s |", cond.name, g.name, r.moves,
				falseMoves, r.failed, r.requests, r.outage.Round(time.Millisecond), r.twoHolders()))
		}
		if err := s.settle(3 * time.Minute); err != nil {
			t.Fatalf("after %s: %v", cond.name, err)
		}
	}
	t.Logf("stress table (%v per condition):\n| condition | setting | moves | false | failed | longest outage | two holders |\n|---|---|---|---|---|---|---|\n%s",
		s.per, strings.Join(table, "\n"))
}
