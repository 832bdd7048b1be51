package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/test/lab"
)

// haproxyPort is where the kubeadm HA guide's haproxy listens: it cannot
// bind 6443 beside the apiserver (kubeadm#2472), so the control plane
// endpoint is VIP:8443.
const haproxyPort = 8443

// toolHAProxy names the keepalived + haproxy group in bench rows.
const toolHAProxy = "keepalived + haproxy (kubeadm guide)"

// haproxyGuideConfig is haproxy.cfg as the kubeadm high-availability guide
// writes it (kubernetes/kubeadm docs/ha-considerations.md, "haproxy
// configuration"), its placeholders filled in: a TCP frontend on
// *:8443, round robin over every apiserver with the guide's checks and
// timeouts (20 s client and server: what cuts idle watches and `logs -f`,
// kubeadm#2227). Only the syslog lines are left out (no syslog in a lab
// namespace) and haproxy runs in the foreground.
func haproxyGuideConfig(backends []netip.Addr) string {
	var b strings.Builder
	b.WriteString(`defaults
    mode                    http
    option                  httplog
    option                  dontlognull
    option http-server-close
    option forwardfor       except 127.0.0.0/8
    option                  redispatch
    retries                 1
    timeout http-request    10s
    timeout queue           20s
    timeout connect         5s
    timeout client          20s
    timeout server          20s
    timeout http-keep-alive 10s
    timeout check           10s

frontend apiserver
`)
	fmt.Fprintf(&b, "    bind *:%d\n", haproxyPort)
	b.WriteString(`    mode tcp
    option tcplog
    default_backend apiserverbackend

backend apiserverbackend
    option httpchk GET /healthz
    http-check expect status 200
    mode tcp
    option ssl-hello-chk
    balance     roundrobin
`)
	for i, a := range backends {
		fmt.Fprintf(&b, "        server n%d %s:6443 check\n", i+1, a)
	}
	return b.String()
}

// haproxyGroup is keepalived + haproxy on every node of the real control
// plane, as the kubeadm guide sets them up: keepalived moves the VIP by its
// check of the local haproxy (the guide's check_apiserver.sh, its curl run
// directly), haproxy spreads VIP:8443 over the three apiservers.
type haproxyGroup struct {
	*realGroup
	procs []*lab.Process
	cfg   string
}

// startHAProxyGroup starts the group on c's nodes with the VIP vip and the
// VRRP router id vrid, haproxy first.
func (c *realCluster) startHAProxyGroup(b testing.TB, vip netip.Prefix, vrid int) *haproxyGroup {
	b.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		b.Skip("haproxy is not installed (make deps installs it)")
	}
	var backends []netip.Addr
	for _, n := range c.nodes {
		backends = append(backends, n.IPv4.Addr())
	}
	g := &haproxyGroup{realGroup: &realGroup{tool: toolHAProxy, vip: vip},
		procs: make([]*lab.Process, len(c.nodes)), cfg: filepath.Join(c.dir, "haproxy.cfg")}
	if err := os.WriteFile(g.cfg, []byte(haproxyGuideConfig(backends)), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("haproxy", "-c", "-f", g.cfg).CombinedOutput(); err != nil {
		b.Fatalf("haproxy refuses the guide's config: %v: %s", err, out)
	}
	for i, n := range c.nodes {
		if err := g.start(c, i); err != nil {
			b.Fatal(err)
		}
		prio := 100
		if i == 0 {
			prio = 101
		}
		k := kubeadmKeepalived(vrid, vip, prio)
		k.Check = fmt.Sprintf("/usr/bin/curl --silent --max-time 2 --insecure https://localhost:%d/ -o /dev/null", haproxyPort)
		if _, err := n.StartKeepalived(c.dir, k); err != nil {
			b.Fatal(err)
		}
	}
	return g
}

// start runs haproxy on node i (again, after a kill): in the foreground, its
// lines kept, not logged.
func (g *haproxyGroup) start(c *realCluster, i int) error {
	p, err := c.nodes[i].StartQuiet(c.nodes[i].Name+"-haproxy", nil, "haproxy", "-db", "-f", g.cfg)
	if err == nil {
		g.procs[i] = p // the lab ends it with the others
	}
	return err
}

// server is the URL the group's clients use.
func (g *haproxyGroup) server() string {
	return fmt.Sprintf("https://%s:%d", g.vip.Addr(), haproxyPort)
}

// etcdLeader names the node whose etcd member leads (its /metrics says
// etcd_server_is_leader 1), or says why it cannot.
func (c *realCluster) etcdLeader() string {
	for _, n := range c.nodes {
		out, err := c.client.Exec("curl", "-sf", "--max-time", "2", "http://"+n.IPv4.Addr().String()+":2379/metrics")
		if err != nil {
			return fmt.Sprintf("unknown (%s: %v)", n.Name, err)
		}
		if strings.Contains(out, "\netcd_server_is_leader 1") {
			return n.Name
		}
	}
	return "none"
}
