package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/docgen"
)

// directive is one Key=Value line of a unit file's [Service] section.
type directive struct{ key, value string }

// meaning is what a directive with the value it explains means for the
// daemon: a changed value must be explained again.
type meaning struct{ value, text string }

// serviceDirectives reads the [Service] section of a unit file or drop-in,
// in order; a key given twice gives two directives, as systemd reads them.
func serviceDirectives(t *testing.T, path string) []directive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []directive
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l
		case strings.HasSuffix(l, `\`):
			t.Fatalf("%s: %q: a continued line; the test reads one line per directive", path, l)
		case section == "[Service]":
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				t.Fatalf("%s: %q is not Key=Value", path, l)
			}
			out = append(out, directive{strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// notSandbox are the [Service] directives that start, stop and restart
// the daemon: docs/sandbox.md lists every other one.
var notSandbox = map[string]bool{
	"Type": true, "EnvironmentFile": true, "ExecStart": true, "ExecReload": true,
	"Restart": true, "RestartSec": true, "RestartPreventExitStatus": true, "TimeoutStopSec": true,
}

// unitMeaning is what each sandboxing directive of the unit means for the
// daemon, by directive; a list given in its inverted form (~...) has its
// own entry, Key~.
var unitMeaning = map[string]meaning{
	"User":                    {"novaedge-cpvip", "runs as its own system user (created by the package's sysusers.d file), not root: it reads only what that user may"},
	"Group":                   {"novaedge-cpvip", "its own group: the env file is `root:novaedge-cpvip 0640`, readable by it and nobody else but root"},
	"AmbientCapabilities":     {"CAP_NET_ADMIN CAP_NET_RAW", "the two capabilities a non-root process is given: NET_ADMIN to bind and release the VIP (addresses, routes), NET_RAW for VRRP's raw IP sockets and ARP / NDP"},
	"CapabilityBoundingSet":   {"CAP_NET_ADMIN CAP_NET_RAW", "no other capability can ever be gained"},
	"NoNewPrivileges":         {"yes", "nothing it could execute gains privileges (it executes nothing)"},
	"ProtectSystem":           {"strict", "the whole file system is read-only to it: it writes no file"},
	"ProtectHome":             {"yes", "`/home`, `/root` and `/run/user` are out of its reach"},
	"PrivateTmp":              {"yes", "a `/tmp` and `/var/tmp` of its own, emptied when it stops"},
	"PrivateDevices":          {"yes", "no device nodes but the pseudo-devices (`/dev/null`, `/dev/urandom`, …)"},
	"PrivateMounts":           {"yes", "its mounts are its own: nothing propagates to or from the host"},
	"ProtectKernelModules":    {"yes", "it cannot load a kernel module"},
	"ProtectKernelTunables":   {"yes", "`/proc/sys` and `/sys` are read-only: it sets no sysctl"},
	"ProtectKernelLogs":       {"yes", "it cannot read or write the kernel log"},
	"ProtectControlGroups":    {"yes", "the cgroup file system is read-only"},
	"ProtectClock":            {"yes", "it cannot set the clock"},
	"ProtectHostname":         {"yes", "it cannot change the host name"},
	"ProtectProc":             {"invisible", "`/proc` shows it no other user's processes"},
	"ProcSubset":              {"pid", "`/proc` shows processes only (its own `smaps`, read to trim its resident pages), no kernel files"},
	"RemoveIPC":               {"yes", "System V and POSIX IPC objects of its user are removed when it stops (it makes none)"},
	"RestrictAddressFamilies": {"AF_INET AF_INET6 AF_NETLINK AF_PACKET AF_UNIX", "IPv4 and IPv6 sockets (VRRP, BGP, BFD, health checks, metrics), netlink (addresses, links, routes, the socket table), packet sockets (ARP), and local sockets for systemd alone: the system bus (asked at SIGTERM whether a restart is queued) and, with spreading, the notification socket (its descriptor store); no other family"},
	"RestrictNamespaces":      {"yes", "it cannot create or enter namespaces"},
	"RestrictRealtime":        {"yes", "no realtime scheduling"},
	"RestrictSUIDSGID":        {"yes", "it cannot create set-user-ID or set-group-ID files"},
	"LockPersonality":         {"yes", "its execution domain is fixed"},
	"MemoryDenyWriteExecute":  {"yes", "no memory both writable and executable (Go compiles ahead of time)"},
	"SystemCallArchitectures": {"native", "only the native architecture's system calls"},
	"SystemCallFilter":        {"@system-service", "the system calls a service usually needs, and no others"},
	"SystemCallFilter~":       {"~@privileged @resources", "less those that need privileges (set ids, mount, `capset`, `bpf`, …) or change resources and scheduling (`setrlimit`, `setpriority`, `sched_setaffinity`, memory policy); `prlimit64`, with which the Go runtime raises its open-files limit, stays allowed"},
	"SystemCallErrorNumber":   {"EPERM", "a refused system call fails with EPERM (the daemon logs the failure) instead of killing the process"},
	"UMask":                   {"0077", "a file it created would be its own alone (it creates none)"},
}

// spreadMeaning is what packaging/spread.conf, the drop-in for
// NOVAEDGE_CP_VIP_SPREAD=true, adds.
var spreadMeaning = map[string]meaning{
	"AmbientCapabilities":    {"CAP_NET_ADMIN CAP_NET_RAW CAP_BPF", "CAP_BPF besides the two: to load the sk_lookup program that steers the VIP's connections and attach it; the daemon drops it from every thread once attached"},
	"CapabilityBoundingSet":  {"CAP_NET_ADMIN CAP_NET_RAW CAP_BPF", "CAP_BPF may be held"},
	"SystemCallFilter":       {"bpf capset", "`bpf` (the program and its maps) and `capset` (dropping CAP_BPF) allowed again, after the unit's `~@privileged`"},
	"NotifyAccess":           {"main", "systemd reads the daemon's notifications: the messages that keep each carried connection's descriptors in its store"},
	"FileDescriptorStoreMax": {"6000", "systemd keeps up to that many descriptors of the daemon's (four per carried connection, 1500 connections) and hands them to the next run after a crash, a SIGKILL or a restart, which adopts the connections; the store is emptied when the unit stops"},
	"LimitNOFILE":            {"16384:524288", "open files: systemd passes the stored descriptors to the next run within the soft limit (16384), before the daemon raises it to the hard one"},
}

// sandboxTable renders the directives of one file with their meanings,
// and fails on a directive the map does not explain or an entry no
// directive uses.
func sandboxTable(t *testing.T, path string, meanings map[string]meaning) string {
	t.Helper()
	used := map[string]bool{}
	var b strings.Builder
	b.WriteString("| directive | value | what it means for the daemon |\n|---|---|---|\n")
	for _, d := range serviceDirectives(t, path) {
		if notSandbox[d.key] {
			continue
		}
		key := d.key
		if strings.HasPrefix(d.value, "~") {
			key += "~"
		}
		m, ok := meanings[key]
		if !ok {
			t.Errorf("%s: %s=%s: the map of meanings in sandbox_doc_test.go does not explain %s: add a line saying what it means for the daemon", path, d.key, d.value, key)
			continue
		}
		used[key] = true
		if m.value != d.value {
			t.Errorf("%s: %s=%s: the map of meanings in sandbox_doc_test.go explains %s=%s: say what the new value means", path, d.key, d.value, d.key, m.value)
			continue
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", d.key, d.value, m.text)
	}
	for k := range meanings {
		if !used[k] {
			t.Errorf("%s has no %s: remove it from the map of meanings in sandbox_doc_test.go", path, k)
		}
	}
	return b.String()
}

// TestSandboxReference keeps docs/sandbox.md in step with the unit and its
// spreading drop-in (go test ./cmd/novaedge-cpvip -run TestSandboxReference -update).
func TestSandboxReference(t *testing.T) {
	root := filepath.Join("..", "..")
	var b strings.Builder
	b.WriteString("`systemd/novaedge-cpvip.service` (installed as `/lib/systemd/system/novaedge-cpvip.service`):\n\n")
	b.WriteString(sandboxTable(t, filepath.Join(root, "systemd", "novaedge-cpvip.service"), unitMeaning))
	b.WriteString("\n`packaging/spread.conf` (installed as `/usr/share/novaedge-cpvip/spread.conf`; a drop-in once\ncopied to `/etc/systemd/system/novaedge-cpvip.service.d/`), added to the unit's lines above:\n\n")
	b.WriteString(sandboxTable(t, filepath.Join(root, "packaging", "spread.conf"), spreadMeaning))
	if t.Failed() {
		return
	}
	if err := docgen.Check(filepath.Join(root, "docs", "sandbox.md"), "<!-- BEGIN GENERATED: sandbox -->\n", "<!-- END GENERATED: sandbox -->\n",
		b.String(), *updateDocs, "go test ./cmd/novaedge-cpvip -run TestSandboxReference -update"); err != nil {
		t.Fatal(err)
	}
}
