package e2e

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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
