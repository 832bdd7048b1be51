package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/staticpod"
)

// checkCredentials reads, on every node, the credentials of our pod's
// process as the kernel reports them in /proc/PID/status: a non-root
// user holding CAP_NET_ADMIN and CAP_NET_RAW only (from the binary's file
// capabilities, within a bounding set of the same two), under the
// RuntimeDefault seccomp filter.
func (k *kubeLab) checkCredentials(t *testing.T) {
	const twoCaps = "0000000000003000" // CAP_NET_ADMIN (12) | CAP_NET_RAW (13)
	want := map[string]string{"Uid": strconv.Itoa(staticpod.UID), "Gid": strconv.Itoa(staticpod.UID), "CapEff": twoCaps, "CapPrm": twoCaps,
		"CapBnd": twoCaps, "CapInh": "0000000000000000", "CapAmb": "0000000000000000", "Seccomp": "2"}
	for _, n := range k.kc.Nodes {
		pids := n.PIDsOf("novaedge-cpvip")
		if len(pids) != 1 {
			t.Fatalf("%s: our processes %v, want one", n.Name, pids)
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pids[0]))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		var shown []string
		for _, line := range strings.Split(string(b), "\n") {
			key, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			fields := strings.Fields(v)
			if len(fields) == 0 {
				continue
			}
			switch key {
			case "Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp":
				got[key] = fields[0] // real id for Uid/Gid; the others are all equal here
				shown = append(shown, strings.Join(strings.Fields(line), " "))
			}
		}
		t.Logf("FIGURE %s: our pod's process as the kernel reports it: %s", n.Name, strings.Join(shown, "; "))
		for key, v := range want {
			if got[key] != v {
				t.Errorf("%s: %s %q, want %q", n.Name, key, got[key], v)
			}
		}
	}
}
