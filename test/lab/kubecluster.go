package lab

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// KubeCluster is a kubeadm control plane in the lab: nodes with their own
// containerd and kubelet, the control-plane images imported into each, one
// bootstrap token and certificate key for the joins.
type KubeCluster struct {
	Bin      KubeBinaries
	Nodes    []*KubeNode
	Endpoint netip.AddrPort // controlPlaneEndpoint: the VIP
	Opts     KubeOptions

	lab      *Lab
	token    string // bootstrap token
	certKey  string // --certificate-key for the control-plane certificates
	adminDir string // on the host: admin.conf once init ran
}

// KubeOptions are cluster-wide kubeadm settings of a test.
type KubeOptions struct {
	// ShutdownDelay is the apiservers' --shutdown-delay-duration (kubeadm
	// sets none: 0).
	ShutdownDelay time.Duration
	// CertSANs are extra names and addresses in the apiservers' serving
	// certificates (a second VIP to compare with).
	CertSANs []string
	// MaxRestartPeriod, when set, caps the kubelet's crash-loop back-off
	// (KubeletCrashLoopBackOffMax, alpha in v1.34): a container killed
	// again and again restarts as soon as the first time, so benchmark
	// trials that kill one are alike.
	MaxRestartPeriod time.Duration
}

// ServiceSubnet is the cluster's service range: half of a documentation
// range, nothing is routed to it (the BGP lab's client is in the other half).
const ServiceSubnet = "203.0.113.0/25"

// NewKubeCluster turns hosts into kubeadm nodes booted with systemd:
// containerd and the kubelet as services, the control-plane images and
// extra (our image) imported.
// Nothing of kubeadm runs yet.
func NewKubeCluster(l *Lab, bin KubeBinaries, hosts []*Host, endpoint netip.AddrPort, opts KubeOptions, extraImages ...string) (*KubeCluster, error) {
	images, err := bin.Images()
	if err != nil {
		return nil, err
	}
	var etcHosts strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&etcHosts, "%s %s\n", h.IPv4.Addr(), h.Name)
	}
	c := &KubeCluster{Bin: bin, Endpoint: endpoint, Opts: opts, lab: l,
		token: randomHex(3) + "." + randomHex(8), certKey: randomHex(32)}
	if c.adminDir, err = l.daemonDir("kubeadmin", "root"); err != nil {
		return nil, err
	}
	for i, h := range hosts {
		n, err := l.AddKubeNode(h, bin.Tree, bin, etcHosts.String(), cniConfig(i), append([]string{images}, extraImages...)...)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", h.Name, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// nodeRegistration is the NodeRegistrationOptions of node n.
func (c *KubeCluster) nodeRegistration(n *KubeNode) string {
	return fmt.Sprintf(`nodeRegistration:
  name: %s
  criSocket: unix://%s
  imagePullPolicy: Never
  kubeletExtraArgs:
  - name: node-ip
    value: %s
`, n.Name, ContainerdSocket, n.IPv4.Addr())
}

// InitConfig is the kubeadm configuration `kubeadm init` gets on node n:
// the VIP as controlPlaneEndpoint, no kube-proxy and no CoreDNS (images
// the lab does not build, and nothing here needs them), etcd at the
// version the lab builds, and a kubelet fit for three on one host.
func (c *KubeCluster) InitConfig(n *KubeNode) string {
	kubelet := ""
	if c.Opts.MaxRestartPeriod > 0 {
		kubelet = fmt.Sprintf("featureGates:\n  KubeletCrashLoopBackOffMax: true\ncrashLoopBackOff:\n  maxContainerRestartPeriod: %s\n", c.Opts.MaxRestartPeriod)
	}
	apiArgs := ""
	if c.Opts.ShutdownDelay > 0 {
		apiArgs = fmt.Sprintf("  extraArgs:\n  - name: shutdown-delay-duration\n    value: %s\n", c.Opts.ShutdownDelay)
	}
	if len(c.Opts.CertSANs) > 0 {
		apiArgs += "  certSANs:\n  - " + strings.Join(c.Opts.CertSANs, "\n  - ") + "\n"
	}
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %s
certificateKey: %s
localAPIEndpoint:
  advertiseAddress: %s
  bindPort: 6443
%s---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: %s
controlPlaneEndpoint: %s
networking:
  serviceSubnet: %s
apiServer:
%setcd:
  local:
    imageTag: %s
    extraArgs:
    - name: unsafe-no-fsync
      value: "true"
proxy:
  disabled: true
dns:
  disabled: true
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
%s`, c.token, c.certKey, n.IPv4.Addr(), c.nodeRegistration(n), KubeVersion, c.Endpoint, ServiceSubnet, apiArgs, EtcdTag, kubelet)
}

// JoinConfig is the kubeadm configuration `kubeadm join --control-plane`
// gets on node n: discovery through the VIP, pinned to the cluster CA.
func (c *KubeCluster) JoinConfig(n *KubeNode, caHash string) string {
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: %s
    token: %s
    caCertHashes:
    - %s
controlPlane:
  certificateKey: %s
  localAPIEndpoint:
    advertiseAddress: %s
    bindPort: 6443
%s`, c.Endpoint, c.token, caHash, c.certKey, n.IPv4.Addr(), c.nodeRegistration(n))
}

// Init runs `kubeadm init --config … --upload-certs` on node i and keeps
// its output; admin.conf is copied out for the tests' client.
func (c *KubeCluster) Init(i int) (*Process, error) {
	n := c.Nodes[i]
	if err := n.WriteFile("/root/kubeadm.yaml", []byte(c.InitConfig(n)), 0o600); err != nil {
		return nil, err
	}
	return n.StartIn("kubeadm-init", true, "kubeadm", "init", "--config", "/root/kubeadm.yaml", "--upload-certs")
}

// Join runs `kubeadm join --control-plane` on node i.
func (c *KubeCluster) Join(i int) (*Process, error) {
	hash, err := c.CAHash()
	if err != nil {
		return nil, err
	}
	n := c.Nodes[i]
	if err := n.WriteFile("/root/kubeadm.yaml", []byte(c.JoinConfig(n, hash)), 0o600); err != nil {
		return nil, err
	}
	return n.StartIn("kubeadm-join", true, "kubeadm", "join", "--config", "/root/kubeadm.yaml")
}

// CAHash is the discovery hash of the cluster CA (sha256 of its public
// key info), as `kubeadm token create --print-join-command` prints it.
func (c *KubeCluster) CAHash() (string, error) {
	b, err := c.Nodes[0].ReadFile("/etc/kubernetes/pki/ca.crt")
	if err != nil {
		return "", err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return "", errors.New("ca.crt: no PEM block")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// AdminConf copies node 0's /etc/kubernetes/admin.conf (its server is the
// VIP) out of the node once and returns its path on the host. Its client
// certificate stays valid after `kubeadm certs renew` (renewal does not
// revoke), so one copy serves the whole test.
func (c *KubeCluster) AdminConf() (string, error) {
	p := filepath.Join(c.adminDir, "admin.conf")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	b, err := c.Nodes[0].ReadFile("/etc/kubernetes/admin.conf")
	if err != nil {
		return "", err
	}
	return p, os.WriteFile(p, b, 0o600)
}

// Client runs the lab's client-go tool on h with admin.conf: the command
// and its flags.
func (c *KubeCluster) Client(h *Host, args ...string) (string, error) {
	conf, err := c.AdminConf()
	if err != nil {
		return "", err
	}
	out, err := h.Exec(append([]string{c.Bin.Client, args[0], "-kubeconfig", conf}, args[1:]...)...)
	return strings.TrimSpace(out), err
}

// StartProbe starts the client tool's probe on h through the VIP with
// admin.conf for d (every interval a fresh TCP+TLS connection, one request);
// extra flags go to the tool (-server https://OTHER:6443).
func (c *KubeCluster) StartProbe(h *Host, d, every time.Duration, extra ...string) (*Process, error) {
	conf, err := c.AdminConf()
	if err != nil {
		return nil, err
	}
	return h.StartQuiet("kclient", nil, append([]string{c.Bin.Client, "probe", "-kubeconfig", conf, "-for", d.String(), "-every", every.String()}, extra...)...)
}

// Manifest is the path of a static pod manifest inside a node.
func Manifest(name string) string { return "/etc/kubernetes/manifests/" + name + ".yaml" }

// MoveManifest moves node i's static pod manifest out of the manifests
// directory (out=true) or back, as `kubeadm certs renew` users and kubeadm
// upgrade do to restart a control-plane pod.
func (c *KubeCluster) MoveManifest(i int, name string, out bool) error {
	from, to := Manifest(name), "/etc/kubernetes/"+name+".yaml.out"
	if !out {
		from, to = to, from
	}
	_, err := c.Nodes[i].Run("mv", from, to)
	return err
}

// SetAPIServerFlag adds --name=value to node i's kube-apiserver manifest (as
// `kubeadm upgrade node phase control-plane` does after the
// ClusterConfiguration's apiServer.extraArgs changed); the kubelet restarts
// the pod. The file is replaced whole, never seen half written.
func (c *KubeCluster) SetAPIServerFlag(i int, name, value string) error {
	n, path := c.Nodes[i], Manifest("kube-apiserver")
	b, err := n.ReadFile(path)
	if err != nil {
		return err
	}
	const cmd = "    - kube-apiserver\n"
	s := string(b)
	if !strings.Contains(s, cmd) {
		return fmt.Errorf("%s on %s: no line %q", path, n.Name, strings.TrimSpace(cmd))
	}
	s = strings.Replace(s, cmd, cmd+"    - --"+name+"="+value+"\n", 1)
	tmp := "/etc/kubernetes/kube-apiserver.yaml.new"
	if err := n.WriteFile(tmp, []byte(s), 0o600); err != nil {
		return err
	}
	_, err = n.Run("mv", tmp, path)
	return err
}

// APIServerLive asks node i's apiserver for /livez from inside the node
// (anonymous: kubeadm's RBAC lets everyone read the health endpoints).
func (c *KubeCluster) APIServerLive(i int) bool {
	_, err := c.Nodes[i].Host.Exec("curl", "-skf", "--max-time", "1", "https://"+c.Nodes[i].IPv4.Addr().String()+":6443/livez") // the host's curl in the node's network
	return err == nil
}
