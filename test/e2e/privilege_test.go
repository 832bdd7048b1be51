package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/novaedge/cpvip/internal/staticpod"
	"github.com/novaedge/cpvip/test/lab"
)

// setprivArgs runs a command as nobody with only CAP_NET_ADMIN and
// CAP_NET_RAW (inheritable, ambient and bounding set): what the systemd
// unit and the static pods grant.
var setprivArgs = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
	"--inh-caps=-all,+net_admin,+net_raw", "--ambient-caps=-all,+net_admin,+net_raw",
	"--bounding-set=-all,+net_admin,+net_raw", "--no-new-privs"}

func TestRunsWithOnlyNetAdminAndNetRaw(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is missing")
	}
	l := newL2Lab(t)
	p, err := l.node.Start("cpvip", l.env("NOVAEDGE_CP_VIP_METRICS_ADDR=127.0.0.1:9450", "NOVAEDGE_CP_VIP_SA_TOKEN_PATH=/nonexistent/token", "NOVAEDGE_CP_VIP_FAIL_OPEN=false"), append(setprivArgs, binary, "run")...)
	if err != nil {
		t.Fatal(err)
	}
	l.waitVIP(t, vip4, true, 15*time.Second)
	l.waitVIP(t, vip6, true, 15*time.Second)
	status, err := l.node.Exec("grep", "-E", "^(Uid|CapEff|CapBnd|CapAmb)", "/proc/"+strconv.Itoa(p.PID())+"/status")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the daemon's credentials:\n%s", status)
	// 0x3000 = CAP_NET_ADMIN (12) | CAP_NET_RAW (13); uid 65534.
	for _, want := range []string{"Uid:\t65534", "CapEff:\t0000000000003000", "CapBnd:\t0000000000003000"} {
		if !strings.Contains(status, want) {
			t.Errorf("credentials lack %q", want)
		}
	}
	waitLine(t, p, 0, "Control-plane VIP bound", "address=2001:db8::100/128")
	// VRRP raw sockets, netlink, ARP and NDP all worked: the client is answered.
	for _, vip := range []string{"192.0.2.100", "2001:db8::100"} {
		if who, err := l.client.Whoami(mustAddr(vip), 6443, 5*time.Second); err != nil || who != "n1" {
			t.Errorf("client via %s: %q %v", vip, who, err)
		}
	}
	if err := l.api.Set(lab.Hang); err != nil { // release works unprivileged too
		t.Fatal(err)
	}
	l.waitVIP(t, vip4, false, 10*time.Second)
	if strings.Contains(p.Output(), "operation not permitted") || strings.Contains(p.Output(), "permission denied") {
		t.Errorf("a permission error in the log:\n%s", p.Output())
	}
}

// TestUnreadableEnvFileWaits: the daemon, as the static pod's user, given
// an env file it may not read (root's, or nobody's from an older install)
// says whose it is and how to fix it, and waits instead of exiting into the
// kubelet's back-off loop; it goes on within seconds of the fix, and
// SIGTERM ends the wait cleanly.
func TestUnreadableEnvFileWaits(t *testing.T) {
	dir, err := os.MkdirTemp("", "cpvip-envwait-") // not t.TempDir: its parent is 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "cpvip-secrets.env")
	if err := os.WriteFile(file, []byte("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_INTERFACE=nonexistent0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	uid := strconv.Itoa(staticpod.UID)
	cmd := exec.Command("setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", binary, "run", "--env-file", file)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	want := "chown " + uid + ":" + uid + " " + file
	if err := lab.Eventually(5*time.Second, func() error {
		if !strings.Contains(out.String(), want) {
			return fmt.Errorf("no %q in %q", want, out.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "owned by 0:0, mode 0600") {
		t.Errorf("the message does not say whose the file is: %s", out.String())
	}
	select {
	case err := <-done:
		t.Fatalf("exited (%v) instead of waiting: %s", err, out.String())
	case <-time.After(3 * time.Second):
	}
	if err := os.Chown(file, staticpod.UID, staticpod.UID); err != nil { // the fix
		t.Fatal(err)
	}
	// Now it reads the file and gets as far as the interface it names.
	if err := lab.Eventually(10*time.Second, func() error {
		if !strings.Contains(out.String(), "nonexistent0") {
			return fmt.Errorf("not past the env file: %q", out.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("SIGTERM did not end it: %s", out.String())
	}
}

// lockedBuffer is an io.Writer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
