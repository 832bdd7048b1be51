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
		out = append(out, stressCondition{name: fmt.Sprintf("%d %% packet loss on the segment", p), loss: true,
			run: func(ctx context.Context, s *stressLab) error { return s.loss(ctx, p) }})
	}
	out = append(out,
		stressCondition{name: "holder's CPU starved (0.2 CPU, two busy loops beside)",
			run: func(ctx context.Context, s *stressLab) error { return s.starve(ctx, 0, 20) }},
		stressCondition{name: "holder's apiserver overloaded (8 clients LISTing 20 MB)",
			run: func(ctx context.Context, s *stressLab) error { return s.overload(ctx, []int{0}, 8) }},
		stressCondition{name: "every apiserver overloaded (8 clients LISTing 20 MB each)",
			run: func(ctx context.Context, s *stressLab) error { return s.overload(ctx, []int{0, 1, 2}, 8) }},
		stressCondition{name: "holder's link cut (trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, func() error { return s.nodes[0].SetSwitchPort(false) }, func() error { return s.nodes[0].SetSwitchPort(true) })
			}},
		stressCondition{name: "holder's apiserver SIGKILLed (trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, func() error { return s.cp.SignalAPIServer(0, syscall.SIGKILL) },
					func() error { return s.cp.StartAPIServer(0) })
			}},
		stressCondition{name: "holder's apiserver hung: its etcd stopped (SIGSTOP, trials)", real: true,
			run: func(ctx context.Context, s *stressLab) error {
				return s.trials(ctx, func() error { return s.cp.SignalEtcd(0, syscall.SIGSTOP) },
					func() error { return s.cp.SignalEtcd(0, syscall.SIGCONT) })
			}},
	)
	return out
}

// freezes freezes node i's daemons for d, waits 3 s, counts each group's
// moves beyond what the freeze allows and brings the VIPs back to n1, until
// ctx ends. A freeze of the holder at least two advertisement intervals
// long may move the VIP once (it is a dead host to its peers: the backups
// wait 3 intervals and the skew from its last advertisement); a shorter
// one, or any freeze of a backup, must move nothing.
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
// where the health checks go), until ctx ends.
func (s *stressLab) loss(ctx context.Context, pct int) error {
	rule := []string{"INPUT", "-i", "eth0", "-m", "statistic", "--mode", "random", "--probability", fmt.Sprintf("%.2f", float64(pct)/100), "-j", "DROP"}
	hosts := append(append([]*lab.Host{}, s.nodes...), s.client)
	var errs []error
	for _, h := range hosts {
		if _, err := h.Exec(append([]string{"iptables", "-I"}, rule...)...); err != nil {
			errs = append(errs, err)
		}
	}
	<-ctx.Done()
	for _, h := range hosts {
		if _, err := h.Exec(append([]string{"iptables", "-D"}, rule...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// starve confines node i's processes (etcd, the apiserver, our daemons) to
// milliCPU/1000 of a CPU with two busy loops beside them (a cgroup v1 CFS
// quota), until ctx ends.
func (s *stressLab) starve(ctx context.Context, i, pctCPU int) error {
	dir := filepath.Join("/sys/fs/cgroup/cpu", s.Prefix+"-stress-"+s.nodes[i].Name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer removeCgroup(dir)
	if err := os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(pctCPU*1000)), 0o644); err != nil {
		return err
	}
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
	pids := []int{s.cp.Etcd(i).PID(), s.cp.APIServer(i).PID()}
	for _, g := range s.groups {
		pids = append(pids, g.procs[i].PID())
	}
	for _, h := range hogs {
		pids = append(pids, h.PID())
	}
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving %d into %s: %w", pid, dir, err)
		}
	}
	<-ctx.Done()
	return nil
}

// removeCgroup moves what is left in a v1 cgroup back to the root and
// removes it.
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
	if err := s.seedObjects(); err != nil {
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

// seedObjects creates the ConfigMaps the overload lists, once.
func (s *stressLab) seedObjects() error {
	url := "https://" + s.nodes[0].IPv4.Addr().String() + ":6443/api/v1/namespaces/default/configmaps"
	script := fmt.Sprintf(`set -e
if curl -sf --cacert %[1]s -H 'Authorization: Bearer %[2]s' %[3]s/stress-%[4]d -o /dev/null; then exit 0; fi
v=$(head -c 75000 /dev/zero | base64 -w0)
for i in $(seq 1 %[4]d); do
  printf '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"stress-%%d"},"data":{"v":"%%s"}}' $i "$v" |
    curl -s --cacert %[1]s -H 'Authorization: Bearer %[2]s' -H 'Content-Type: application/json' -X POST --data-binary @- %[3]s -o /dev/null
done`, s.cp.PKI.CAFile, s.cp.AdminToken, url, overloadObjects)
	_, err := s.client.Exec("sh", "-c", script)
	return err
}

// trials applies a real failure to n1, waits until another node holds
// every group's VIP (or 20 s; n1 letting it go is not enough: a link cut
// releases it at once, and undone before a backup took over the VIP stays),
// undoes it and settles the lab, until ctx ends.
func (s *stressLab) trials(ctx context.Context, fail, undo func() error) error {
	for ctx.Err() == nil {
		if err := fail(); err != nil {
			return err
		}
		err := lab.Eventually(20*time.Second, func() error {
			for _, g := range s.groups {
				if hs, err := s.holders(g.vip); err != nil || len(hs) != 1 || hs[0] == 0 {
					return fmt.Errorf("%s: %s held by %v (%v), not one other node", g.name, g.vip, s.names(hs), err)
				}
			}
			return nil
		})
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
