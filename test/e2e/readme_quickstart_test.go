package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeFile is the README whose quick starts the labs run literally.
const readmeFile = "../../README.md"

// quickStart is what an operator copies from one quick start of the
// README: the commands of its shell blocks and of its inline `sudo …`
// code, in order.
type quickStart struct {
	commands []string
}

// inlineSudo is a command written inline in a step ("`sudo install …`").
var inlineSudo = regexp.MustCompile("`(sudo [^`]+)`")

// readQuickStart reads the README's section under heading (a "## " line).
func readQuickStart(t testing.TB, heading string) quickStart {
	t.Helper()
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var q quickStart
	fenced := false
	for _, l := range strings.Split(section, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "```"):
			fenced = !fenced
		case fenced:
			cmd, _, _ := strings.Cut(l, "   #") // a comment after the command
			if cmd = strings.TrimSpace(cmd); cmd != "" && !strings.HasPrefix(cmd, "#") {
				q.commands = append(q.commands, cmd)
			}
		default:
			for _, m := range inlineSudo.FindAllStringSubmatch(l, -1) {
				q.commands = append(q.commands, m[1])
			}
		}
	}
	return q
}

// before is the commands up to the first that starts with prefix (the
// ones an operator runs before it); it fails when none does.
func (q quickStart) before(t testing.TB, prefix string) []string {
	t.Helper()
	for i, c := range q.commands {
		if strings.HasPrefix(c, prefix) {
			return q.commands[:i]
		}
	}
	t.Fatalf("the README's quick start has no command %q…: %q", prefix, q.commands)
	return nil
}

// find is the first command that starts with prefix.
func (q quickStart) find(t testing.TB, prefix string) string {
	t.Helper()
	for _, c := range q.commands {
		if strings.HasPrefix(c, prefix) {
			return c
		}
	}
	t.Fatalf("the README's quick start has no command %q…: %q", prefix, q.commands)
	return ""
}

// TestReadmeQuickStartParses: the kubeadm quick start holds, in order, the
// binary's install, the manifest written with sudo tee, and kubeadm init
// with the VIP as control-plane endpoint (the kubeadm lab runs the first
// two literally and gives kubeadm init the same endpoint).
func TestReadmeQuickStartParses(t *testing.T) {
	q := readQuickStart(t, "Quick start: kubeadm (static pod)")
	pre := q.before(t, "sudo kubeadm init")
	if len(pre) != 3 || !strings.HasPrefix(pre[0], "sudo install ") || !strings.HasPrefix(pre[1], "sudo mkdir -p /etc/kubernetes/manifests") ||
		!strings.Contains(pre[2], "| sudo tee /etc/kubernetes/manifests/novaedge-cpvip.yaml") {
		t.Fatalf("the kubeadm quick start's commands before kubeadm init: %q", pre)
	}
	init := q.find(t, "sudo kubeadm init")
	for _, want := range []string{"--control-plane-endpoint " + vip4.Addr().String() + ":6443", "--upload-certs"} {
		if !strings.Contains(init, want) {
			t.Errorf("the README's %q lacks %q (the kubeadm lab's init configuration has it)", init, want)
		}
	}
	if !strings.Contains(pre[2], "--vip-address "+vip4.String()) {
		t.Errorf("the README's %q does not bind the labs' VIP %s", pre[2], vip4)
	}
}

// runReadmeQuickStart puts us on node i as the README's kubeadm quick
// start says, literally: the release binary (ours, under the name the
// README gives it) installed, the manifest written by `manifest pod |
// sudo tee`. The nodes run as root: sudo, when the node has none, runs
// the command as is.
func (k *kubeLab) runReadmeQuickStart(t testing.TB, i int) {
	t.Helper()
	n := k.kc.Nodes[i]
	q := readQuickStart(t, "Quick start: kubeadm (static pod)")
	install := strings.Fields(q.find(t, "sudo install "))
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile("/root/"+install[len(install)-2], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Run("sh", "-c", "command -v sudo"); err != nil {
		if err := n.WriteFile("/usr/local/bin/sudo", []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range q.before(t, "sudo kubeadm init") {
		if out, err := n.Run("sh", "-ec", "cd /root && "+c); err != nil {
			t.Fatalf("%s$ %s: %v\n%s", n.Name, c, err, out)
		}
	}
}
