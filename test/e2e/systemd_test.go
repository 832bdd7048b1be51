package e2e

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// The README's install procedure, literally, on three Debian 12 nodes
// booted with systemd as PID 1 (systemd-nspawn in the lab's namespaces,
// test/lab/systemd.go) in front of a real control plane: `make package`'s
// .deb installed by apt, the env file, check-config, `systemctl enable
// --now`; then what an operator does to the unit and the node, each step
// with the client's failed requests through the VIP counted and, in L2
// mode, the VIP's holders sampled.

// sdStep is one thing done to the running group and what it may cost.
type sdStep struct {
	name   string
	do     func(t *testing.T, node int) // node: the holder (L2) or the node the step is done on (BGP)
	failed int                          // requests through the VIP that may fail
	double time.Duration                // L2: the longest two-holder stretch allowed
	keep   bool                         // L2: the VIP never leaves the node
	why    string                       // where the bounds come from
}

// handover is the failed requests a step that moves the VIP (L2) or
// withdraws a route (BGP) may cost: the request in flight on the node
// that lets go when it does (its connection is reset or times out; 1 in
// every such step measured), and one more as margin.
const handover = 2

const (
	restartWhy  = "a restart systemd queued is not a stop: the VIP stays bound for the next run, which resumes it (docs/vrrp.md#our-own-restart): nothing moves"
	handoverWhy = "a graceful stop hands the VIP over make-before-break: only the request in flight at the move fails (1 measured), 2 is one more"
	withdrawWhy = "a graceful stop withdraws the route first: only a request in flight to the node fails (0-1 measured), 2 is one more"
)

// sdLab is the group on systemd nodes, in either mode.
type sdLab struct {
	nodes  []*lab.SystemdNode
	cp     *lab.ControlPlane
	client *lab.Host
	debs   []string // the .debs, oldest first, on the host
	newer  string   // the version the newer build logs ("": not known, another build was given)
	env    func(i int) string
	probe  *lab.Process
	// dropIns are files of /usr/share/novaedge-cpvip installed as drop-ins
	// of the unit before it starts (spread.conf), caps the capability mask
	// the daemon then runs with ("": CAP_NET_ADMIN and CAP_NET_RAW, 3000).
	dropIns  []string
	caps     string
	exposure float64 // the highest exposure score allowed; 0: maxExposure
}

// systemdTree is the cached systemd node tree; without it the test is
// skipped (or fails in CI).
func systemdTree(t testing.TB) string {
	t.Helper()
	tree, err := lab.SystemdTreeFromEnv()
	needBuilt(t, err)
	return tree
}

// bootNodes makes systemd nodes of hosts and boots them.
func (s *sdLab) bootNodes(t testing.TB, tree string, hosts []*lab.Host) {
	t.Helper()
	for _, h := range hosts {
		n, err := h.NewSystemdNode(tree)
		if err != nil {
			t.Fatal(err)
		}
		// The cluster CA where kubeadm puts it (the daemon's default).
		ca, err := os.ReadFile(s.cp.PKI.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.WriteFile("/etc/kubernetes/pki/ca.crt", ca, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := n.Boot(time.Minute); err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, n)
	}
	t.Cleanup(func() { s.checkJournals(t) })
}

// buildDebs packs the build under test twice, as two versions: the second
// is the upgrade.
func (s *sdLab) buildDebs(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "novaedge-cpvip.newer")
	s.newer = "e2e-upgrade"
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+s.newer, "-o", newer, "../../cmd/novaedge-cpvip")
	if other := os.Getenv("NOVAEDGE_E2E_BINARY"); other != "" { // another build: the upgrade is to itself
		build, s.newer = exec.Command("cp", other, newer), ""
	}
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the upgrade: %v\n%s", err, out)
	}
	for _, b := range []struct{ bin, version string }{{binary, "0.1.0~e2e1"}, {newer, "0.1.0~e2e2"}} {
		deb, err := lab.BuildDeb(repo, b.bin, b.version, dir)
		if err != nil {
			t.Fatal(err)
		}
		s.debs = append(s.debs, deb)
	}
}

// sh runs a shell command line on node i as an operator would type it.
func (s *sdLab) sh(t testing.TB, i int, line string) string {
	t.Helper()
	out, err := s.nodes[i].Exec("sh", "-c", line)
	if err != nil {
		t.Fatalf("%s$ %s: %v\n%s", s.nodes[i].Name, line, err, out)
	}
	return out
}

// install is the README's install section on node i with deb: apt, the
// env file, check-config, enable --now.
func (s *sdLab) install(t testing.TB, i int, deb string) {
	t.Helper()
	n := s.nodes[i]
	b, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile("/root/"+filepath.Base(deb), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s.sh(t, i, "cd /root && apt-get install -y -q ./"+filepath.Base(deb))
	// sudoedit: the settings appended to the packaged file (mode kept).
	f, err := os.OpenFile(filepath.Join(n.Root, "etc/novaedge/cpvip.env"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(s.env(i))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out := s.sh(t, i, "novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env")
	if strings.Contains(out, "BGP_PASSWORD=s") {
		t.Errorf("check-config printed the BGP password:\n%s", out)
	}
	for _, d := range s.dropIns {
		s.sh(t, i, "install -D -m 0644 /usr/share/novaedge-cpvip/"+d+" /etc/systemd/system/novaedge-cpvip.service.d/"+d+" && systemctl daemon-reload")
	}
	s.sh(t, i, "systemctl enable --now novaedge-cpvip")
}

// mainPID is the daemon's PID on node i (0: not running).
func (s *sdLab) mainPID(t testing.TB, i int) int {
	t.Helper()
	pid, err := s.nodes[i].MainPID("novaedge-cpvip")
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitActive waits until node i's unit is active with a main process.
func (s *sdLab) waitActive(t testing.TB, i int, within time.Duration) {
	t.Helper()
	err := lab.Eventually(within, func() error {
		out, _ := s.nodes[i].Exec("systemctl", "is-active", "novaedge-cpvip")
		if strings.TrimSpace(out) != "active" {
			return fmt.Errorf("%s: novaedge-cpvip is %q", s.nodes[i].Name, strings.TrimSpace(out))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sandboxRefusal is a journal line of the sandbox refusing the daemon
// something: a permission error of ours, or a seccomp kill.
var sandboxRefusal = regexp.MustCompile(`(?i)operation not permitted|permission denied|\bEPERM\b|\bEACCES\b|status=31/SYS|SIGSYS|seccomp|read-only file system|address family not supported|EAFNOSUPPORT`)

// checkJournals fails the test for any sandbox refusal in any node's
// journal of the unit.
func (s *sdLab) checkJournals(t testing.TB) {
	for _, n := range s.nodes {
		if !n.Running() {
			t.Logf("%s: not running, its journal not read", n.Name)
			continue
		}
		out, err := n.Journal("-u", "novaedge-cpvip")
		if err != nil {
			t.Errorf("%s: journal: %v", n.Name, err)
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if sandboxRefusal.MatchString(line) {
				t.Errorf("%s: the sandbox refused something: %s", n.Name, line)
			}
		}
		if t.Failed() {
			t.Logf("%s: journal of novaedge-cpvip, last lines:\n%s", n.Name, tail(out, 40))
		}
	}
}

// maxExposure is the unit's `systemd-analyze security` score
// (docs/security.md): what it is today, so that any option lost fails.
const maxExposure = 1.8

// checkSandbox checks, on node i, that the daemon runs as its own user with
// only its two capabilities, and the loaded unit's exposure score.
func (s *sdLab) checkSandbox(t testing.TB, i int) {
	t.Helper()
	pid := s.mainPID(t, i)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	st := string(b)
	uid := regexp.MustCompile(`(?m)^Uid:\s+(\d+)`).FindStringSubmatch(st)
	if want := strings.TrimSpace(s.sh(t, i, "id -u novaedge-cpvip")); uid == nil || uid[1] != want || want == "0" {
		t.Errorf("%s: the daemon runs as uid %v, want novaedge-cpvip's %s", s.nodes[i].Name, uid, want)
	}
	// CAP_NET_ADMIN (12) and CAP_NET_RAW (13): 0x3000; with the spreading
	// drop-in CAP_BPF (39) too in the bounding set, dropped from the others
	// once the steering is attached.
	for set, want := range map[string]string{"CapEff": "3000", "CapPrm": "3000", "CapAmb": "3000", "CapBnd": cmp.Or(s.caps, "3000")} {
		if m := regexp.MustCompile(`(?m)^` + set + `:\s+([0-9a-f]+)`).FindStringSubmatch(st); m == nil || strings.TrimLeft(m[1], "0") != want {
			t.Errorf("%s: the daemon's %s is %v, want %s and no more", s.nodes[i].Name, set, m, want)
		}
	}
	out, _ := s.nodes[i].Exec("systemd-analyze", "security", "--no-pager", "novaedge-cpvip")
	m := regexp.MustCompile(`Overall exposure level for novaedge-cpvip.service: ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("%s: systemd-analyze security:\n%s", s.nodes[i].Name, out)
	}
	var score float64
	fmt.Sscan(m[1], &score)
	t.Logf("FIGURE systemd: the loaded unit's exposure %.1f (systemd-analyze security)", score)
	if limit := cmp.Or(s.exposure, maxExposure); score > limit {
		t.Errorf("%s: exposure %.1f, at most %.1f:\n%s", s.nodes[i].Name, score, limit, out)
	}
}

// journalSince is node i's journal of the unit from when on.
func (s *sdLab) journalSince(t testing.TB, i int, when time.Time) string {
	t.Helper()
	out, err := s.nodes[i].Journal("-u", "novaedge-cpvip", "--since", "@"+fmt.Sprintf("%.3f", float64(when.UnixMilli())/1000))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitJournal waits until node i's journal of the unit since when has a
// line with every part.
func (s *sdLab) waitJournal(t testing.TB, i int, when time.Time, within time.Duration, parts ...string) string {
	t.Helper()
	var found string
	err := lab.Eventually(within, func() error {
		for _, l := range strings.Split(s.journalSince(t, i, when), "\n") {
			if containsAll(l, parts) {
				found = l
				return nil
			}
		}
		return fmt.Errorf("%s: no journal line with %q", s.nodes[i].Name, parts)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// systemctl runs systemctl on node i.
func (s *sdLab) systemctl(args ...string) func(t *testing.T, i int) {
	return func(t *testing.T, i int) { s.sh(t, i, "systemctl "+strings.Join(args, " ")) }
}

// reload changes a live value and a restart-only one in node i's env file,
// reloads, and checks what the journal says; the daemon keeps its PID. The
// restart-only change is put back (a later restart must not split the
// group) and reloaded again.
func (s *sdLab) reload(t *testing.T, i int) {
	pid := s.mainPID(t, i)
	at := time.Now()
	s.sh(t, i, "cp /etc/novaedge/cpvip.env /root/cpvip.env.before && printf 'NOVAEDGE_CP_VIP_LOG_LEVEL=debug\\nNOVAEDGE_CP_VIP_API_PORT=6444\\n' >> /etc/novaedge/cpvip.env && systemctl reload novaedge-cpvip")
	s.waitJournal(t, i, at, 10*time.Second, "Configuration reloaded", "NOVAEDGE_CP_VIP_LOG_LEVEL")
	s.waitJournal(t, i, at, 10*time.Second, "need a restart", "NOVAEDGE_CP_VIP_API_PORT")
	s.sh(t, i, "cp /root/cpvip.env.before /etc/novaedge/cpvip.env && systemctl reload novaedge-cpvip")
	if now := s.mainPID(t, i); now != pid {
		t.Errorf("%s: reload changed the daemon's PID %d → %d", s.nodes[i].Name, pid, now)
	}
}

// killHard is `systemctl kill -s KILL`: systemd restarts the daemon
// (Restart=always), which must log that it took over what the killed one
// held.
func (s *sdLab) killHard(t *testing.T, i int) {
	pid, at := s.mainPID(t, i), time.Now()
	s.sh(t, i, "systemctl kill -s KILL novaedge-cpvip")
	err := lab.Eventually(10*time.Second, func() error {
		if now, err := s.nodes[i].MainPID("novaedge-cpvip"); err != nil || now == 0 || now == pid {
			return fmt.Errorf("%s: not restarted yet (PID %d)", s.nodes[i].Name, now)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.waitJournal(t, i, at, 10*time.Second, "Starting control-plane VIP manager")
}

// stopStart is `systemctl stop` (it must end with Result=success), then
// start again.
func (s *sdLab) stopStart(t *testing.T, i int) {
	s.sh(t, i, "systemctl stop novaedge-cpvip")
	if r := strings.TrimSpace(s.sh(t, i, "systemctl show -P Result novaedge-cpvip")); r != "success" {
		t.Errorf("%s: stop ended with Result=%s", s.nodes[i].Name, r)
	}
	s.settle(t)
	s.sh(t, i, "systemctl start novaedge-cpvip")
}

// powerCycle powers node i off (a real shutdown) and boots it again: the
// enabled unit starts at boot.
func (s *sdLab) powerCycle(t *testing.T, i int) {
	if err := s.nodes[i].Poweroff(time.Minute); err != nil {
		t.Fatal(err)
	}
	s.settle(t)
	if err := s.nodes[i].Boot(time.Minute); err != nil {
		t.Fatal(err)
	}
	s.waitActive(t, i, 30*time.Second)
}

// upgrade installs the newer .deb over the running daemon (its postinst
// restarts it) and checks the new build runs.
func (s *sdLab) upgrade(t *testing.T, i int) {
	at := time.Now()
	b, err := os.ReadFile(s.debs[1])
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(s.debs[1])
	if err := s.nodes[i].WriteFile("/root/"+name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pid := s.mainPID(t, i)
	s.sh(t, i, "cd /root && apt-get install -y -q ./"+name)
	s.waitJournal(t, i, at, 30*time.Second, "Starting control-plane VIP manager", "version="+s.newer)
	if now := s.mainPID(t, i); now == pid {
		t.Errorf("%s: the upgrade did not restart the daemon (PID %d)", s.nodes[i].Name, pid)
	}
	if out := s.sh(t, i, "grep -c '^NOVAEDGE_CP_VIP_ADDRESS=' /etc/novaedge/cpvip.env"); strings.TrimSpace(out) != "1" {
		t.Errorf("%s: the upgrade lost the env file's settings", s.nodes[i].Name)
	}
	if _, err := s.nodes[i].Exec("test", "-f", "/usr/share/novaedge-cpvip/cpvip.env"); err != nil {
		t.Errorf("%s: the upgrade left no reference env file in /usr/share/novaedge-cpvip", s.nodes[i].Name)
	}
}

// remove is `apt remove` (the service stops, releasing what it holds; the
// env file stays), then `apt purge` (the env file goes).
func (s *sdLab) remove(t *testing.T, i int) {
	s.sh(t, i, "apt-get remove -y -q novaedge-cpvip")
	if _, err := s.nodes[i].Exec("test", "-f", "/etc/novaedge/cpvip.env"); err != nil {
		t.Errorf("%s: apt remove deleted the env file", s.nodes[i].Name)
	}
	s.settle(t)
	s.sh(t, i, "apt-get purge -y -q novaedge-cpvip")
	if _, err := s.nodes[i].Exec("test", "-e", "/etc/novaedge/cpvip.env"); err == nil {
		t.Errorf("%s: apt purge left the env file", s.nodes[i].Name)
	}
}

// settle is the time after a step in which its cost is still counted: the
// failover that follows it, at the default 1 s adverts (master down 3.6 s).
func (s *sdLab) settle(testing.TB) { time.Sleep(5 * time.Second) }

// startProbe starts the client's requests through the VIP.
func (s *sdLab) startProbe(t testing.TB) {
	t.Helper()
	p, err := s.cp.StartProbe(s.client, realServer, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s.probe = p
	waitFirstOK(t, p, time.Now(), 30*time.Second)
}

// costs is one row per step: what the client and the samplers saw.
type costs []string

func (c *costs) add(format string, args ...any) { *c = append(*c, fmt.Sprintf(format, args...)) }

func (c costs) log(t testing.TB, mode string) {
	t.Logf("FIGURE systemd %s, per step:\n  %s", mode, strings.Join(c, "\n  "))
}

// TestSystemdL2 is the README's procedure on three systemd nodes in L2
// mode (dual stack): one holder; then reload, restart, kill, stop, power
// off and on, upgrade and removal on the holder.
func TestSystemdL2(t *testing.T) {
	tree := systemdTree(t)
	c := newRealCluster(t, 3, lab.APIServerOptions{})
	s := &sdLab{cp: c.cp, client: c.client}
	s.env = func(int) string { return "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "," + vip6.String() + "\n" }
	s.buildDebs(t)
	c.startControlPlane(t)
	s.bootNodes(t, tree, c.nodes)
	for i := range s.nodes {
		s.install(t, i, s.debs[0])
	}
	holder, _ := c.waitHolder(t, vip4, -1, time.Minute)
	if h6, _ := c.waitHolder(t, vip6, -1, 30*time.Second); h6 != holder {
		t.Fatalf("the IPv4 VIP is on %s, the IPv6 one on %s", c.nodes[holder].Name, c.nodes[h6].Name)
	}
	if out := s.sh(t, holder, "novaedge-cpvip status"); !strings.Contains(out, vip4.Addr().String()) {
		t.Errorf("status on the holder names no VIP:\n%s", out)
	} else {
		t.Logf("novaedge-cpvip status on the holder:\n%s", out)
	}
	s.checkSandbox(t, holder)
	s.startProbe(t)
	steps := []sdStep{
		{name: "systemctl reload", do: s.reload, keep: true, why: "nothing moves and the apiserver is not touched"},
		{name: "systemctl restart", do: s.systemctl("restart", "novaedge-cpvip"), keep: true, why: restartWhy},
		{name: "systemctl kill -s KILL", do: s.killHard, keep: true, why: "the restarted daemon keeps the VIP it finds bound: nothing moves"},
		{name: "systemctl stop, start", do: s.stopStart, failed: handover, double: makeBeforeBreak, why: handoverWhy},
		{name: "poweroff, boot", do: s.powerCycle, failed: handover, double: makeBeforeBreak, why: handoverWhy + "; at boot it joins as a backup"},
		{name: "apt install (upgrade)", do: s.upgrade, keep: true, why: restartWhy + " (the postinst's try-restart)"},
		{name: "apt remove, purge", do: s.remove, failed: handover, double: makeBeforeBreak, why: handoverWhy + " (the prerm stops it)"},
	}
	var rows costs
	for _, st := range steps {
		holder, _ = c.waitHolder(t, vip4, -1, 30*time.Second)
		m4, m6 := c.monitor(t, vip4), c.monitor(t, vip6)
		var away func() (int, time.Duration, time.Duration)
		if st.keep {
			away = c.watchAway(t, vip4, holder)
		}
		from := time.Now()
		st.do(t, holder)
		s.settle(t)
		d4, max4 := m4.stop()
		d6, max6 := m6.stop()
		ss := lab.Samples(s.probe)
		ok, failed, firstErr := lab.RequestCounts(ss, from, time.Now())
		now, _ := c.waitHolder(t, vip4, -1, 30*time.Second)
		row := fmt.Sprintf("%-24s on %s: %d of %d requests failed (%q), two holders IPv4 %s IPv6 %s, then held by %s",
			st.name, c.nodes[holder].Name, failed, ok+failed, firstErr, d4, d6, c.nodes[now].Name)
		if st.keep {
			n, first, blind := away()
			row += fmt.Sprintf(", away %d samples (first at %s, blind %s)", n, first, blind)
			if n > 0 {
				t.Errorf("%s: the VIP left %s (%d samples, first %s after)", st.name, c.nodes[holder].Name, n, first)
			}
		}
		rows.add("%s", row)
		if failed > st.failed {
			t.Errorf("%s: %d requests failed, at most %d (%s); %s", st.name, failed, st.failed, st.why, lab.RequestRuns(ss, from, time.Now()))
		}
		if max(d4, d6) > st.double || max4 > 2 || max6 > 2 {
			t.Errorf("%s: two holders for %s (IPv4) %s (IPv6), at most %s (%s)", st.name, d4, d6, st.double, st.why)
		}
	}
	rows.log(t, "L2")
}

// TestSystemdBGP is the README's procedure on three systemd nodes in BGP
// mode behind an FRR router (TCP MD5, BFD at the defaults): three routes;
// then the same steps on one node, the others announcing throughout.
func TestSystemdBGP(t *testing.T) {
	tree := systemdTree(t)
	bin := realBinaries(t)
	b := newBGPLabOf(t, 3, false)
	cp, err := lab.NewControlPlane(b.Lab, bin, b.nodes, []netip.Addr{vip4.Addr()}, lab.APIServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &sdLab{cp: cp, client: b.client}
	const password = "lab-md5-secret"
	s.env = func(i int) string {
		return strings.Join([]string{"NOVAEDGE_CP_VIP_MODE=bgp", "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String(),
			"NOVAEDGE_BGP_LOCAL_AS=65002", "NOVAEDGE_BGP_ROUTER_ID=" + nodeV4(i).String(),
			"NOVAEDGE_BGP_PEERS=" + routerV4.String() + "@65001", "NOVAEDGE_BGP_PASSWORD=" + password,
			"NOVAEDGE_BFD_ENABLED=true", ""}, "\n")
	}
	s.buildDebs(t)
	if err := cp.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range b.nodes {
		if err := cp.WaitLive(i, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var ns []netip.Addr
	for i := range b.nodes {
		ns = append(ns, nodeV4(i))
	}
	if b.frr, err = b.router.StartFRR(lab.FRRConfig{BGP: lab.BGPRouterConfig(routerV4, 65002, ns, password, true), BFD: lab.BFDRouterConfig(300, 3)}); err != nil {
		t.Fatal(err)
	}
	s.bootNodes(t, tree, b.nodes)
	for i := range s.nodes {
		s.install(t, i, s.debs[0])
	}
	b.waitHops(t, vip4, time.Minute, ns...)
	for i := range b.nodes {
		b.waitBFD(t, nodeV4(i), "up", 30*time.Second)
	}
	s.checkSandbox(t, 0)
	s.startProbe(t)
	steps := []sdStep{
		{name: "systemctl reload", do: s.reload, why: "nothing is withdrawn"},
		{name: "systemctl restart", do: s.systemctl("restart", "novaedge-cpvip"), failed: handover, why: withdrawWhy},
		{name: "systemctl kill -s KILL", do: s.killHard, failed: handover, why: "the session's TCP connection closes with the process: the router withdraws the route at once; " + withdrawWhy},
		{name: "systemctl stop, start", do: s.stopStart, failed: handover, why: withdrawWhy},
		{name: "poweroff, boot", do: s.powerCycle, failed: handover, why: withdrawWhy},
		{name: "apt install (upgrade)", do: s.upgrade, failed: handover, why: withdrawWhy + " (the postinst restarts it)"},
		{name: "apt remove, purge", do: s.remove, failed: handover, why: withdrawWhy + " (the prerm stops it)"},
	}
	var rows costs
	const node = 0
	for k, st := range steps {
		b.waitHops(t, vip4, 30*time.Second, ns...)
		from := time.Now()
		st.do(t, node)
		s.settle(t)
		want := ns
		if k == len(steps)-1 {
			want = ns[1:] // removed: its route is gone for good
		}
		b.waitHops(t, vip4, 30*time.Second, want...)
		ss := lab.Samples(s.probe)
		ok, failed, firstErr := lab.RequestCounts(ss, from, time.Now())
		rows.add("%-24s on %s: %d of %d requests failed (%q)", st.name, b.nodes[node].Name, failed, ok+failed, firstErr)
		if failed > st.failed {
			t.Errorf("%s: %d requests failed, at most %d (%s); %s", st.name, failed, st.failed, st.why, lab.RequestRuns(ss, from, time.Now()))
		}
	}
	rows.log(t, "BGP")
}

// TestSystemdUpgradeFromRoot installs the package of a release whose unit
// ran the daemon as root (env file 0600 root, testdata/root-run), then
// upgrades to this one over the running daemon: the postinst creates the
// service's user and gives its group the env file, the restarted daemon
// runs as that user, binds the VIP again and reads its file on reload.
func TestSystemdUpgradeFromRoot(t *testing.T) {
	tree := systemdTree(t)
	c := newRealCluster(t, 1, lab.APIServerOptions{})
	s := &sdLab{cp: c.cp, client: c.client}
	s.env = func(int) string { return "NOVAEDGE_CP_VIP_ADDRESS=" + vip4.String() + "\n" }
	s.buildDebs(t)
	old, err := lab.BuildDeb("testdata/root-run", binary, "0.0.9~rootrun", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c.startControlPlane(t)
	s.bootNodes(t, tree, c.nodes)
	s.install(t, 0, old)
	c.waitHolder(t, vip4, -1, time.Minute)
	if got := strings.TrimSpace(s.sh(t, 0, "stat -c '%a %U %G' /etc/novaedge/cpvip.env; ps -o user= -p $(systemctl show -P MainPID novaedge-cpvip)")); got != "600 root root\nroot" {
		t.Fatalf("the old package: env file and daemon user %q, want 600 root root, root", got)
	}
	at := time.Now()
	s.upgrade(t, 0)
	c.waitHolder(t, vip4, -1, 30*time.Second)
	if got := strings.TrimSpace(s.sh(t, 0, "stat -c '%a %U %G' /etc/novaedge/cpvip.env")); got != "640 root novaedge-cpvip" {
		t.Errorf("after the upgrade the env file is %q, want 640 root novaedge-cpvip", got)
	}
	s.checkSandbox(t, 0)
	if out := s.sh(t, 0, "novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env 2>&1"); strings.Contains(out, "not readable by the service") {
		t.Errorf("check-config after the upgrade:\n%s", out)
	}
	s.sh(t, 0, "echo NOVAEDGE_CP_VIP_LOG_LEVEL=debug >> /etc/novaedge/cpvip.env && systemctl reload novaedge-cpvip")
	s.waitJournal(t, 0, at, 10*time.Second, "Configuration reloaded", "NOVAEDGE_CP_VIP_LOG_LEVEL")
	// The old way back: a file root alone may read is named by check-config.
	s.sh(t, 0, "chgrp root /etc/novaedge/cpvip.env")
	if out := s.sh(t, 0, "novaedge-cpvip check-config --env-file /etc/novaedge/cpvip.env 2>&1"); !strings.Contains(out, "not readable by the service's user novaedge-cpvip") {
		t.Errorf("check-config does not say the service cannot read a root-only env file:\n%s", out)
	}
}
