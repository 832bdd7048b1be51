package lab

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// RealDirEnv names the environment variable that points at the directory
// holding the real control plane's programs (kube-apiserver, etcd, kclient);
// `make realcp` builds them there and `make e2e` sets it.
const RealDirEnv = "NOVAEDGE_REALCP_DIR"

// RealBinaries are the real control plane's programs, built from their
// upstream Go modules by test/realcp.
type RealBinaries struct {
	APIServer, Etcd, Client string
}

// RealBinariesFromEnv finds the programs in the directory RealDirEnv names.
func RealBinariesFromEnv() (RealBinaries, error) {
	dir := os.Getenv(RealDirEnv)
	if dir == "" {
		return RealBinaries{}, fmt.Errorf("%s is not set (make realcp builds the real control plane; make e2e sets it)", RealDirEnv)
	}
	b := RealBinaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd"), Client: filepath.Join(dir, "kclient")}
	for _, f := range []string{b.APIServer, b.Etcd, b.Client} {
		if _, err := os.Stat(f); err != nil {
			return RealBinaries{}, fmt.Errorf("real control plane: %w", err)
		}
	}
	return b, nil
}

// APIServerOptions are the per-test kube-apiserver settings.
type APIServerOptions struct {
	// AnonymousAuthOff sets --anonymous-auth=false: /livez without a token
	// answers 401.
	AnonymousAuthOff bool
	// ShutdownDelay is --shutdown-delay-duration: after SIGTERM /readyz
	// fails at once while the server keeps serving this long.
	ShutdownDelay time.Duration
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// ControlPlane is a stacked control plane as kubeadm builds it: on each node
// an etcd member (one cluster over all nodes) and a kube-apiserver on :6443
// that talks to its local member, with certificates from one lab CA, RBAC,
// and a bootstrap admin token for the tests only.
type ControlPlane struct {
	Bin        RealBinaries
	PKI        *PKI
	AdminToken string // system:masters, via --token-auth-file

	lab     *Lab
	nodes   []*Host
	dir     string
	opts    APIServerOptions
	sans    []netip.Addr
	etcd    []*Process
	apis    []*Process
	started []time.Time          // when each apiserver was last started
	nodeBin map[int]RealBinaries // UseBinaries
}

// UseBinaries makes node i run etcd and the apiserver from b (copies of
// its own: their pages are charged to the node's memory cgroup).
func (c *ControlPlane) UseBinaries(i int, b RealBinaries) {
	if c.nodeBin == nil {
		c.nodeBin = map[int]RealBinaries{}
	}
	c.nodeBin[i] = b
}

func (c *ControlPlane) binOf(i int) RealBinaries {
	if b, ok := c.nodeBin[i]; ok {
		return b
	}
	return c.Bin
}

// NewControlPlane prepares certificates and data directories for nodes; vips
// go into the serving certificates. Nothing runs yet.
func NewControlPlane(l *Lab, bin RealBinaries, nodes []*Host, vips []netip.Addr, opts APIServerOptions) (*ControlPlane, error) {
	dir, err := l.daemonDir("realcp", "root")
	if err != nil {
		return nil, err
	}
	pki, err := NewPKI(dir)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	c := &ControlPlane{Bin: bin, PKI: pki, AdminToken: hex.EncodeToString(b), lab: l, nodes: nodes, dir: dir, opts: opts,
		sans: vips, etcd: make([]*Process, len(nodes)), apis: make([]*Process, len(nodes)), started: make([]time.Time, len(nodes))}
	tokens := c.AdminToken + `,lab-admin,1,"system:masters"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

// auditPolicy records who asked for the health endpoints and the answer
// (the tests read from it which token the daemon's checks carried), and
// the client tool's probe, a GET of namespace kube-system (which apiserver
// served it: spreading).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  nonResourceURLs: ["/livez", "/livez/*", "/readyz", "/readyz/*"]
- level: Metadata
  verbs: ["get"]
  resources: [{group: "", resources: ["namespaces"], resourceNames: ["kube-system"]}]
- level: None
`

// AuditEvent is one request (a health check, a probe) as node i's apiserver audited it.
type AuditEvent struct {
	Time time.Time
	User string // "system:anonymous" without a token
	URI  string
	Code int
}

// Audit returns the health requests and probes node i's apiserver has answered.
func (c *ControlPlane) Audit(i int) ([]AuditEvent, error) {
	b, err := os.ReadFile(c.auditLog(i))
	if err != nil {
		return nil, err
	}
	var out []AuditEvent
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct {
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			RequestURI     string    `json:"requestURI"`
			StageTimestamp time.Time `json:"stageTimestamp"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		out = append(out, AuditEvent{Time: e.StageTimestamp, User: e.User.Username, URI: e.RequestURI, Code: e.ResponseStatus.Code})
	}
	return out, nil
}

func (c *ControlPlane) auditLog(i int) string {
	return filepath.Join(c.dir, "audit-"+c.nodes[i].Name+".log")
}

// StartEtcd starts (or restarts, on its kept data) node i's etcd member.
func (c *ControlPlane) StartEtcd(i int) error {
	var cluster []string
	for _, n := range c.nodes {
		cluster = append(cluster, n.Name+"=http://"+n.IPv4.Addr().String()+":2380")
	}
	ip := c.nodes[i].IPv4.Addr().String()
	// --unsafe-no-fsync: the lab's etcd lives in tmpfs-like temp space on a
	// loaded 2-core VM; fsync stalls there would be the VM's, not etcd's.
	p, err := c.nodes[i].StartQuiet("etcd-"+c.nodes[i].Name, nil, c.binOf(i).Etcd,
		"--name", c.nodes[i].Name, "--data-dir", filepath.Join(c.dir, "etcd-"+c.nodes[i].Name),
		"--listen-client-urls", "http://"+ip+":2379,http://127.0.0.1:2379",
		"--advertise-client-urls", "http://"+ip+":2379",
		"--listen-peer-urls", "http://"+ip+":2380", "--initial-advertise-peer-urls", "http://"+ip+":2380",
		"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-token", c.lab.Prefix,
		"--initial-cluster-state", "new", "--log-level", "warn", "--unsafe-no-fsync")
	if err == nil {
		c.etcd[i] = p
	}
	return err
}

// StartAPIServer starts (or restarts) node i's kube-apiserver.
func (c *ControlPlane) StartAPIServer(i int) error {
	n := c.nodes[i]
	ips := append([]netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback(), n.IPv4.Addr()}, c.sans...)
	if n.IPv6.IsValid() {
		ips = append(ips, n.IPv6.Addr())
	}
	cert, key, err := c.PKI.ServingCert("apiserver-"+n.Name, ips)
	if err != nil {
		return err
	}
	args := []string{c.binOf(i).APIServer,
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=::", "--secure-port=6443", "--advertise-address=" + n.IPv4.Addr().String(),
		"--tls-cert-file=" + cert, "--tls-private-key-file=" + key, "--client-ca-file=" + c.PKI.CAFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.PKI.SAPub, "--service-account-signing-key-file=" + c.PKI.SAKey,
		// Nothing is routed to service addresses in the lab; a documentation range keeps it so.
		"--service-cluster-ip-range=203.0.113.0/24",
		"--authorization-mode=Node,RBAC", "--token-auth-file=" + filepath.Join(c.dir, "tokens.csv"),
		fmt.Sprintf("--anonymous-auth=%t", !c.opts.AnonymousAuthOff),
		"--shutdown-delay-duration=" + c.opts.ShutdownDelay.String(),
		"--audit-policy-file=" + filepath.Join(c.dir, "audit-policy.yaml"), "--audit-log-path=" + c.auditLog(i),
		"--audit-log-mode=blocking",
		"--profiling=false", "--v=0",
	}
	p, err := n.StartQuiet("kube-apiserver-"+n.Name, nil, append(args, c.opts.ExtraArgs...)...)
	if err == nil {
		c.apis[i], c.started[i] = p, time.Now()
	}
	return err
}

// SetShutdownDelay changes --shutdown-delay-duration for the apiservers
// started from now on.
func (c *ControlPlane) SetShutdownDelay(d time.Duration) { c.opts.ShutdownDelay = d }

// Start starts every etcd member, then every apiserver.
func (c *ControlPlane) Start() error {
	for i := range c.nodes {
		if err := c.StartEtcd(i); err != nil {
			return err
		}
	}
	for i := range c.nodes {
		if err := c.StartAPIServer(i); err != nil {
			return err
		}
	}
	return nil
}

// APIServer is node i's kube-apiserver process (nil before it started).
func (c *ControlPlane) APIServer(i int) *Process { return c.apis[i] }

// Etcd is node i's etcd process (nil before it started).
func (c *ControlPlane) Etcd(i int) *Process { return c.etcd[i] }

// Started is when node i's apiserver was last started.
func (c *ControlPlane) Started(i int) time.Time { return c.started[i] }

// SignalAPIServer sends sig to node i's apiserver (SIGTERM, SIGKILL, SIGSTOP, SIGCONT).
func (c *ControlPlane) SignalAPIServer(i int, sig syscall.Signal) error {
	return signalProcess(c.apis[i], sig)
}

// SignalEtcd sends sig to node i's etcd member.
func (c *ControlPlane) SignalEtcd(i int, sig syscall.Signal) error {
	return signalProcess(c.etcd[i], sig)
}

func signalProcess(p *Process, sig syscall.Signal) error {
	if p == nil {
		return errors.New("not started")
	}
	return p.Signal(sig)
}

// Livez asks node i's apiserver for path (/livez, /readyz, …) from inside
// its namespace, with the admin token when admin is set, and returns the
// status (0 with the error when there is no answer within a second).
func (c *ControlPlane) Livez(i int, path string, admin bool) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443"+path, nil)
	if err != nil {
		return 0, err
	}
	if admin {
		req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	}
	resp, err := c.nodes[i].Client(time.Second).Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// WaitLive waits up to d until node i's /livez answers 200 to the admin.
func (c *ControlPlane) WaitLive(i int, d time.Duration) error {
	return Eventually(d, func() error {
		code, err := c.Livez(i, "/livez", true)
		if err == nil && code != 200 {
			err = fmt.Errorf("%s /livez: %d", c.nodes[i].Name, code)
		}
		return err
	})
}

// Client runs the lab's client-go tool on h against server with the admin
// token: the command (probe, token, delete-sa) and its flags.
func (c *ControlPlane) Client(h *Host, server string, args ...string) (string, error) {
	out, err := h.Exec(append([]string{c.Bin.Client, args[0], "-server", server, "-token", c.AdminToken, "-ca", c.PKI.CAFile}, args[1:]...)...)
	return strings.TrimSpace(out), err
}

// StartProbe starts the client tool's probe on h through server (every
// 10 ms a fresh TCP+TLS connection and one request) for d; extra flags follow.
func (c *ControlPlane) StartProbe(h *Host, server string, d time.Duration, extra ...string) (*Process, error) {
	args := append([]string{c.Bin.Client, "probe", "-server", server, "-token", c.AdminToken, "-ca", c.PKI.CAFile, "-for", d.String()}, extra...)
	return h.StartQuiet("kclient", nil, args...)
}
