package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// stressConditions are the suite's conditions, in the order they run.
func stressConditions() []stressCondition {
	var out []stressCondition
	for _, d := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		out = append(out, stressCondition{name: fmt.Sprintf("holder's daemons frozen %v, again and again", d), freeze: d,
			run: func(ctx context.Context, s *stressLab) error { return s.freezes(ctx, 0, d) }})
	}
	out = append(out, stressCondition{name: "a backup's daemons frozen 2 s, again and again", freeze: 2 * time.Second,
		run: func(ctx context.Context, s *stressLab) error { return s.freezes(ctx, 1, 2*time.Second) }})
	for _, p := range []int{1, 5, 20} {
		out = append(out, stressCondition{name: fmt.Sprintf("%d %% packet loss on the segment", p), segmentLoss: true,
			run: func(ctx context.Context, s *stressLab) error { return s.loss(ctx, p) }})
	}
	for _, p := range []int{5, 20} {
		out = append(out, stressCondition{name: fmt.Sprintf("%d %% of VRRP advertisements lost", p),
			run: func(ctx context.Context, s *stressLab) error { return s.loss(ctx, p, "-p", "vrrp") }})
	}
	out = append(out, stressCondition{name: "50 ms ± 20 ms jitter on the segment",
		run: func(ctx context.Context, s *stressLab) error {
			return s.jitter(ctx, 50*time.Millisecond, 20*time.Millisecond)
		}})
	out = append(out,
		stressCondition{name: "holder's CPU starved (0.2 CPU, two busy loops beside)",
			run: func(ctx context.Context, s *stressLab) error { return s.starve(ctx, 0, 20) }},
		stressCondition{name: "holder's memory under pressure (32 MiB held beside, its page cache cut to three quarters)",
			run: func(ctx context.Context, s *stressLab) error { return s.squeeze(ctx, 32, 75) }},
		stressCondition{name: "holder's apiserver overloaded (8 clients LISTing 20 MB)",
			run: func(ctx context.Context, s *stressLab) error { return s.overload(ctx, []int{0}, 8) }},
		stressCondition{name: "every apiserver overloaded (8 clients LISTing 20 MB each)",
			run: func(ctx context.Context, s *stressLab) error { return s.overload(ctx, []int{0, 1, 2}, 8) }},
		stressCondition{name: "holder's link cut (trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, trialWait, func() error { return s.nodes[0].SetSwitchPort(false) }, func() error { return s.nodes[0].SetSwitchPort(true) })
			}},
		stressCondition{name: "holder's apiserver SIGKILLed (trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, trialWait, func() error { return s.cp.SignalAPIServer(0, syscall.SIGKILL) },
					func() error { return s.cp.StartAPIServer(0) })
			}},
		// A refused port is a certain failure: the holder resigns and a
		// healthy backup takes over within its skew, settled or not (under
		// this loss no backup might reach two clean passes in a row). The
		// loss is in force for each trial's kill and takeover, and lifted
		// for the restart and the settling that follow (a control plane
		// under 20 % loss may not settle within the trials' 3 minutes).
		stressCondition{name: "holder's apiserver SIGKILLed under 20 % packet loss on the segment (trials)", real: true, segmentLoss: true,
			run: func(ctx context.Context, s *stressLab) error {
				var stopLoss context.CancelFunc
				lossDone := make(chan error, 1)
				fail := func() error {
					var lossCtx context.Context
					lossCtx, stopLoss = context.WithCancel(ctx)
					go func() { lossDone <- s.loss(lossCtx, 20) }()
					time.Sleep(2 * time.Second) // the loss in force before the kill
					return s.cp.SignalAPIServer(0, syscall.SIGKILL)
				}
				undo := func() error {
					stopLoss()
					return errors.Join(<-lossDone, s.cp.StartAPIServer(0))
				}
				return s.trials(ctx, killedUnderLoss, fail, undo)
			}},
		stressCondition{name: "holder's apiserver hung: its etcd stopped (SIGSTOP, trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, trialWait, func() error { return s.cp.SignalEtcd(0, syscall.SIGSTOP) },
					func() error { return s.cp.SignalEtcd(0, syscall.SIGCONT) })
			}},
	)
	return out
}

// freezes freezes node i's daemons for d, waits 3 s, counts each group's
// moves beyond what the freeze allows and brings the VIPs back to n1, until
// ctx ends. A freeze of the holder at least two advertisement intervals
// long may move the VIP once (a dead master to its peers: the backups wait
// 3 intervals and the skew from its last advertisement, and, its host
// answering for the VIP, up to RESTART_WAIT); a shorter one, or any freeze
// of a backup, must move nothing.
func (s *stressLab) freezes(ctx context.Context, i int, d time.Duration) error {
	for ctx.Err() == nil {
		marks := make([]int, len(s.groups))
		for k, g := range s.groups {
			g.mu.Lock()
			marks[k] = len(g.moves)
			g.mu.Unlock()
		}
		if err := s.freeze(i, d); err != nil {
			return err
		}
		time.Sleep(3 * time.Second)
		for k, g := range s.groups {
			allowed := 0
			if i == 0 && d >= 2*g.advert {
				allowed = 1
			}
			g.mu.Lock()
			g.excess += max(0, len(g.moves)-marks[k]-allowed)
			g.mu.Unlock()
		}
		if err := s.settle(3 * time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// freeze stops every group's daemon on node i for d (SIGSTOP, SIGCONT),
// as a VM pause or a live migration stops the whole process.
func (s *stressLab) freeze(i int, d time.Duration) error {
	var errs []error
	for _, g := range s.groups {
		errs = append(errs, g.procs[i].Signal(syscall.SIGSTOP))
	}
	time.Sleep(d)
	for _, g := range s.groups {
		errs = append(errs, g.procs[i].Signal(syscall.SIGCONT))
	}
	return errors.Join(errs...)
}

// loss drops pct % of the packets every host of the segment receives on
// it (iptables' statistic match: this kernel has no netem; not loopback,
// where the health checks go), or of those that match (e.g. "-p", "vrrp":
// the advertisements alone, etcd's peer traffic untouched), until ctx ends.
func (s *stressLab) loss(ctx context.Context, pct int, match ...string) error {
	rule := append([]string{"INPUT", "-i", "eth0"}, match...)
	return s.onSegment(ctx, append(rule, "-m", "statistic", "--mode", "random",
		"--probability", fmt.Sprintf("%.2f", float64(pct)/100), "-j", "DROP"), nil)
}

// jitter delays every packet every host of the segment receives on it by
// delay ± spread, uniformly (netem's "delay 50ms 20ms", which this kernel
// lacks: NFQUEUE and test/tools/nfdelay, one in each host), until ctx ends.
// Packets may overtake each other, as with netem.
func (s *stressLab) jitter(ctx context.Context, delay, spread time.Duration) error {
	return s.onSegment(ctx, []string{"INPUT", "-i", "eth0", "-j", "NFQUEUE", "--queue-num", "0", "--queue-bypass"},
		func(h *lab.Host) (*lab.Process, error) {
			p, err := h.StartQuiet("nfdelay", nil, s.tools.nfdelay, "-delay", delay.String(), "-jitter", spread.String())
			if err != nil {
				return nil, err
			}
			// Bound to its queue before the rule sends packets there
			// (--queue-bypass would let them through undelayed).
			if _, err := p.WaitLine(10*time.Second, 0, "nfdelay: ready"); err != nil {
				p.Kill()
				return nil, fmt.Errorf("nfdelay in %s: %w: %s", h.Name, err, p.Output())
			}
			return p, nil
		})
}

// onSegment starts beside (nil: nothing) on every host of the segment,
// inserts the iptables rule on each, and when ctx ends deletes the rules it
// inserted, waits for what the queue still holds and ends what it started:
// each must still be running then, and exit 0.
func (s *stressLab) onSegment(ctx context.Context, rule []string, beside func(*lab.Host) (*lab.Process, error)) error {
	hosts := append(append([]*lab.Host{}, s.nodes...), s.client)
	var errs []error
	var procs []*lab.Process
	var ruled []*lab.Host
	for _, h := range hosts {
		if beside != nil {
			p, err := beside(h)
			if err != nil {
				errs = append(errs, err)
				break
			}
			procs = append(procs, p)
		}
		if _, err := h.Exec(append([]string{"iptables", "-I"}, rule...)...); err != nil {
			errs = append(errs, err)
			break
		}
		ruled = append(ruled, h)
	}
	if len(errs) == 0 {
		<-ctx.Done()
	}
	for _, h := range ruled {
		if _, err := h.Exec(append([]string{"iptables", "-D"}, rule...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if len(procs) > 0 {
		time.Sleep(200 * time.Millisecond) // the last queued packets get their verdict
	}
	for _, p := range procs {
		if !p.Running() {
			errs = append(errs, fmt.Errorf("%s ended before the condition did: %s", p.Name, p.Output()))
			continue
		}
		_ = p.Signal(syscall.SIGTERM)
		if code, err := p.Wait(5 * time.Second); err != nil || code != 0 {
			p.Kill()
			errs = append(errs, fmt.Errorf("%s: exit %d (%v): %s", p.Name, code, err, p.Output()))
		} else if n := p.Lines(); n > 0 {
			s.t.Logf("%s: %s", p.Name, p.Line(n-1))
		}
	}
	return errors.Join(errs...)
}

// starve confines node i's processes (etcd, the apiserver, our daemons) to
// pctCPU % of a CPU with two busy loops beside them (a cgroup v1 CFS
// quota), until ctx ends.
func (s *stressLab) starve(ctx context.Context, i, pctCPU int) error {
	var hogs []*lab.Process
	defer func() {
		for _, h := range hogs {
			h.Kill()
		}
	}()
	for range 2 {
		h, err := s.nodes[i].StartQuiet("hog", nil, "sh", "-c", "while :; do :; done")
		if err != nil {
			return err
		}
		hogs = append(hogs, h)
	}
	undo, err := s.confine(i, "cpu", [][2]string{{"cpu.cfs_quota_us", strconv.Itoa(pctCPU * 1000)}}, hogs)
	if err != nil {
		return err
	}
	defer undo()
	<-ctx.Done()
	return nil
}

// squeeze puts node 0's processes (etcd, the apiserver, our daemons: born
// in its memory cgroup, running from copies of their programs that only
// they read, newStressLab) under memory pressure: a process beside them
// holds holdMB MiB and keeps touching it (test/tools/memhog, the first the
// OOM killer takes), then the cgroup's limit leaves them all their
// anonymous memory and keepPct % of their page cache. With no swap, the
// kernel reclaims the rest of their file pages — their code, etcd's
// mmapped database — which they read again and again (major faults,
// counted). Until ctx ends; then the limit goes.
func (s *stressLab) squeeze(ctx context.Context, holdMB, keepPct int) error {
	dir := s.cgroup(0, "memory")
	write := func(file, v string) error { return os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644) }
	hog, err := s.nodes[0].StartQuiet("memhog", nil, s.tools.memhog, "-mb", strconv.Itoa(holdMB), "-oom-score-adj", "1000")
	if err != nil {
		return err
	}
	defer hog.Kill()
	if _, err := hog.WaitLine(10*time.Second, 0, "memhog: holding"); err != nil {
		return fmt.Errorf("memhog: %w: %s", err, hog.Output())
	}
	before, err := memoryStat(dir)
	if err != nil {
		return err
	}
	limit := before["rss"] + before["cache"]*int64(keepPct)/100
	// The kernel reclaims down to the new limit before it takes it (EBUSY
	// when it cannot: anonymous memory grew meanwhile); a few tries.
	for try := 0; ; try++ {
		if err = write("memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err == nil || try == 4 {
			break
		}
		limit += 4 << 20
	}
	if err != nil {
		return fmt.Errorf("setting the memory limit to %d MiB: %w", limit>>20, err)
	}
	defer func() { _ = write("memory.limit_in_bytes", "-1") }()
	s.t.Logf("node %s: memory limit %d MiB: anonymous %d MiB (memhog %d of it), page cache %d MiB cut to %d %%",
		s.nodes[0].Name, limit>>20, before["rss"]>>20, holdMB, before["cache"]>>20, keepPct)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			if !hog.Running() { // the OOM killer: the pressure is gone, and the limit would take the next
				_ = write("memory.limit_in_bytes", "-1")
				return fmt.Errorf("memhog ended before the condition did (OOM?): %s", hog.Output())
			}
		}
	}
	after, _ := memoryStat(dir)
	b, _ := os.ReadFile(filepath.Join(dir, "memory.failcnt"))
	s.t.Logf("node %s: under the limit: %d major faults (%d before), the limit hit %s times, page cache %d MiB at the end",
		s.nodes[0].Name, after["pgmajfault"]-before["pgmajfault"], before["pgmajfault"], strings.TrimSpace(string(b)), after["cache"]>>20)
	return nil
}

// memoryStat reads a cgroup v1 memory.stat.
func memoryStat(dir string) (map[string]int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			out[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out, nil
}

// cgroup is the cgroup v1 directory of node i's confinement under controller.
func (s *stressLab) cgroup(i int, controller string) string {
	return lab.CgroupDir(controller, s.Prefix+"-stress-"+s.nodes[i].Name)
}

// confine makes node i's cgroup of controller, writes files (name, value,
// in order) into it, and moves node i's processes (etcd, the apiserver,
// every group's daemon) and extra into it; undo moves them back out and
// removes it.
func (s *stressLab) confine(i int, controller string, files [][2]string, extra []*lab.Process) (undo func(), err error) {
	dir := s.cgroup(i, controller)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	undo = func() { removeCgroup(dir) }
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
			undo()
			return nil, err
		}
	}
	pids := []int{s.cp.Etcd(i).PID(), s.cp.APIServer(i).PID()}
	for _, g := range s.groups {
		pids = append(pids, g.procs[i].PID())
	}
	for _, p := range extra {
		pids = append(pids, p.PID())
	}
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			undo()
			return nil, fmt.Errorf("moving %d into %s: %w", pid, dir, err)
		}
	}
	return undo, nil
}

func removeCgroup(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	root := filepath.Join(filepath.Dir(dir), "cgroup.procs")
	for _, f := range strings.Fields(string(b)) {
		_ = os.WriteFile(root, []byte(f), 0o644)
	}
	_ = syscall.Rmdir(dir)
}

// overloadObjects is how many 100 kB ConfigMaps the overload lists.
const overloadObjects = 200

// overload makes n clients per node LIST every ConfigMap of the cluster
// (20 MB) over and over against the apiservers of nodes, until ctx ends.
func (s *stressLab) overload(ctx context.Context, nodes []int, n int) error {
	if err := s.seedConfigMaps("stress", overloadObjects); err != nil {
		return err
	}
	var loops []*lab.Process
	for _, i := range nodes {
		url := "https://" + s.nodes[i].IPv4.Addr().String() + ":6443/api/v1/configmaps"
		for range n {
			// Each LIST in the background, waited for: SIGTERM ends the
			// one running too, so nothing lists on into the next condition.
			p, err := s.client.StartQuiet("lister", nil, "sh", "-c", fmt.Sprintf(
				"trap 'kill $c 2>/dev/null; exit 0' TERM; while :; do curl -s --max-time 20 --cacert %s -H 'Authorization: Bearer %s' -o /dev/null -w '%%{http_code} %%{size_download}\n' %s & c=$!; wait $c; done",
				s.cp.PKI.CAFile, s.cp.AdminToken, url))
			if err != nil {
				return err
			}
			loops = append(loops, p)
		}
	}
	<-ctx.Done()
	statuses := map[string]int{}
	for _, p := range loops {
		_ = p.Signal(syscall.SIGTERM)
		if _, err := p.Wait(5 * time.Second); err != nil {
			p.Kill()
		}
		for _, l := range strings.Split(p.Output(), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				statuses[f[0]]++
			}
		}
	}
	s.t.Logf("overload: LIST answers by status: %v", statuses)
	return nil
}

// trialWait is how long a trial waits for another node to hold the VIPs.
const trialWait = 20 * time.Second

// killedUnderLoss bounds the time from the holder's apiserver SIGKILLed
// under 20 % loss to another node holding every VIP: the bench's bound for
// a killed apiserver's outage at the defaults (1.5 s, bench/goals.json)
// and one health check more (1 s), for the checks and advertisements the
// loss costs. A refused port is certain: the holder resigns whether or not
// a backup has settled.
const killedUnderLoss = 2500 * time.Millisecond

// trials applies a real failure to n1, waits until another node holds
// every group's VIP, at most within (n1 letting it go is not enough: a
// link cut releases it at once, and undone before a backup took over the
// VIP stays), undoes it and settles the lab, until ctx ends.
func (s *stressLab) trials(ctx context.Context, within time.Duration, fail, undo func() error) error {
	for ctx.Err() == nil {
		if err := fail(); err != nil {
			return err
		}
		failed := time.Now()
		err := lab.Eventually(within, func() error {
			for _, g := range s.groups {
				if hs, err := s.holders(g.vip); err != nil || len(hs) != 1 || hs[0] == 0 {
					return fmt.Errorf("%s: %s held by %v (%v), not one other node", g.name, g.vip, s.names(hs), err)
				}
			}
			return nil
		})
		if err == nil {
			s.t.Logf("trial: another node held every VIP %v after the failure", time.Since(failed).Round(time.Millisecond))
		} else {
			err = fmt.Errorf("no other node held every VIP within %v of the failure: %w", within, err)
		}
		if uerr := undo(); uerr != nil {
			return errors.Join(err, uerr)
		}
		if err != nil {
			return err
		}
		if err := s.settle(3 * time.Minute); err != nil {
			return err
		}
	}
	return nil
}
