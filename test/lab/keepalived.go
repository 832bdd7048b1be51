package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Keepalived describes one keepalived VRRP instance.
type Keepalived struct {
	VRID     int
	Priority int
	Advert   string // advert_int in seconds, like "0.1"
	VIP      string // like 192.0.2.100/32
	Preempt  bool
	// Check, when set, is a vrrp_script command tracked by the instance,
	// run every CheckInterval seconds, with fall, rise and weight.
	Check                             string
	CheckInterval, Fall, Rise, Weight int
}

// config renders keepalived.conf. vrrp_version 3 goes in global_defs:
// keepalived reads advert_int 0.1 as VRRPv2 (and rounds it) if the version
// comes later.
func (k Keepalived) config(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global_defs {\n  router_id %s\n  vrrp_version 3\n  script_user root\n  enable_script_security\n}\n", name)
	if k.Check != "" {
		fmt.Fprintf(&b, "vrrp_script check_apiserver {\n  script \"%s\"\n  interval %d\n  weight %d\n  fall %d\n  rise %d\n}\n",
			k.Check, k.CheckInterval, k.Weight, k.Fall, k.Rise)
	}
	fmt.Fprintf(&b, "vrrp_instance VI_%d {\n  state BACKUP\n  interface eth0\n  virtual_router_id %d\n  priority %d\n  advert_int %s\n",
		k.VRID, k.VRID, k.Priority, k.Advert)
	if !k.Preempt {
		b.WriteString("  nopreempt\n")
	}
	if k.Check != "" {
		b.WriteString("  track_script {\n    check_apiserver\n  }\n")
	}
	fmt.Fprintf(&b, "  virtual_ipaddress {\n    %s dev eth0\n  }\n}\n", k.VIP)
	return b.String()
}

// StartKeepalived runs keepalived (VRRP only, in the foreground, logging to
// the console) in the host with its own config and pid files under dir.
func (h *Host) StartKeepalived(dir string, k Keepalived) (*Process, error) {
	conf := filepath.Join(dir, h.Name+"-keepalived.conf")
	if err := os.WriteFile(conf, []byte(k.config(h.Name)), 0o644); err != nil {
		return nil, err
	}
	return h.Start("keepalived-"+h.Name, nil, "keepalived", "--dont-fork", "--log-console", "--log-detail",
		"--vrrp", "--use-file", conf,
		"--pid", filepath.Join(dir, h.Name+"-keepalived.pid"),
		"--vrrp_pid", filepath.Join(dir, h.Name+"-vrrp.pid"))
}
