package config

import (
	"errors"
	"flag"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// isolateEnv clears every variable of ours for the test and restores them after.
func isolateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); isOwnName(k) {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	for _, f := range Fields() {
		t.Setenv(f.Env, "")
		os.Unsetenv(f.Env)
	}
}

func load(t *testing.T, env map[string]string, args ...string) (*Config, error) {
	t.Helper()
	isolateEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fl := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing flags: %v", err)
	}
	c, _, err := Load(fl)
	return c, err
}

func TestDefaults(t *testing.T) {
	c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		VIPAddress: PrefixList{netip.MustParsePrefix("192.0.2.100/32")}, APIPort: 6443,
		HealthInterval: time.Second, HealthFastInterval: 100 * time.Millisecond, HealthTimeout: 3 * time.Second, Drain: true, FailOpen: true,
		HealthHungAfter: 500 * time.Millisecond, HealthEtcdPorts: PortList{2379, 2380}, FailThreshold: 3, RiseThreshold: 1,
		SATokenPath: "/var/run/secrets/kubernetes.io/serviceaccount/token", TLSServerName: "kubernetes", Mode: ModeL2, VRID: 51,
		Priority: 100, AdvertInterval: 200 * time.Millisecond, AdvertsPerInterval: 2, RestartWait: 4 * time.Second, GARPRepeat: 3, ConflictCheck: true, BGPHoldTime: 9 * time.Second,
		BFDDetectMult: 3, BFDTxInterval: 300 * time.Millisecond, BFDRxInterval: 300 * time.Millisecond,
		BFDAuth: BFDAuthNone, MetricsAddr: "127.0.0.1:9450", LogFormat: "text", LogLevel: 0,
	}
	if Describe(c) != Describe(&want) {
		t.Errorf("defaults differ:\ngot:\n%s\nwant:\n%s", Describe(c), Describe(&want))
	}
	if got := c.APIServerURL(); got != "https://localhost:6443/livez" {
		t.Errorf("APIServerURL = %q", got)
	}
}

func TestFlagOverridesEnv(t *testing.T) {
	c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_VRID": "7"},
		"--vrid", "9", "--preempt", "--vip-address", "192.0.2.5/24, 2001:db8::5/128")
	if err != nil {
		t.Fatal(err)
	}
	if c.VRID != 9 || !c.Preempt || len(c.VIPAddress) != 2 || c.VIPAddress[1] != netip.MustParsePrefix("2001:db8::5/128") {
		t.Errorf("got VRID=%d preempt=%v vip=%v", c.VRID, c.Preempt, c.VIPAddress)
	}
}

func TestEnvFilePrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpvip.env")
	content := "# comment\n; other comment\n\nNOVAEDGE_CP_VIP_ADDRESS=\"192.0.2.100/32\"\nexport NOVAEDGE_CP_VIP_PRIORITY=150\nNOVAEDGE_CP_VIP_VRID='12'\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_VRID": "20"}, "--env-file", path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Priority != 150 || c.VRID != 20 {
		t.Errorf("priority=%d (want 150 from file) vrid=%d (want 20: environment beats file)", c.Priority, c.VRID)
	}
}

// TestGiven: manifest pod's view of the configuration is what was given,
// with Load's precedence (flag over environment over file), and nothing
// for an invalid one.
func TestGiven(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpvip.env")
	if err := os.WriteFile(path, []byte("NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\nNOVAEDGE_CP_VIP_VRID=12\nNOVAEDGE_CP_VIP_PRIORITY=150\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	given := func(env map[string]string, args ...string) (map[string]string, error) {
		isolateEnv(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fl := BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return Given(fl)
	}
	got, err := given(map[string]string{"NOVAEDGE_CP_VIP_VRID": "20", "NOVAEDGE_CP_VIP_PRIORITY": "160"}, "--env-file", path, "--priority", "170")
	want := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_VRID": "20", "NOVAEDGE_CP_VIP_PRIORITY": "170"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("given %v, %v; want %v", got, err, want)
	}
	if got, err := given(nil, "--vrid", "300", "--vip-address", "192.0.2.100/32"); err == nil || got != nil {
		t.Errorf("invalid configuration given back: %v", got)
	}
}

func TestEnvFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"unknown variable NOVAEDGE_CP_VIP_ADRESS": "NOVAEDGE_CP_VIP_ADRESS=192.0.2.1/32\n",
		"line 2: want KEY=VALUE":                  "# x\nnot a line\n",
		"unterminated \" quote":                   "NOVAEDGE_CP_VIP_ADDRESS=\"192.0.2.1/32\n",
	} {
		path := filepath.Join(dir, "f.env")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := load(t, nil, "--env-file", path)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("content %q: error %v, want it to contain %q", content, err, name)
		}
	}
	if _, err := load(t, nil, "--env-file", filepath.Join(dir, "missing.env")); err == nil {
		t.Error("missing env file: no error")
	}
}

func TestInvalidValuesNameTheVariable(t *testing.T) {
	bgp := map[string]string{"NOVAEDGE_CP_VIP_MODE": "bgp", "NOVAEDGE_BGP_LOCAL_AS": "65001",
		"NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11", "NOVAEDGE_BGP_PEER_ADDRESS": "198.51.100.1", "NOVAEDGE_BGP_PEER_AS": "65000"}
	tests := []struct {
		name string
		env  map[string]string
		want string // substring of the error
	}{
		{"missing VIP", nil, "NOVAEDGE_CP_VIP_ADDRESS (--vip-address): is required"},
		{"empty VIP", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": ""}, "NOVAEDGE_CP_VIP_ADDRESS (--vip-address): is required"},
		{"bad CIDR", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.300/32"}, `NOVAEDGE_CP_VIP_ADDRESS (--vip-address)="192.0.2.300/32"`},
		{"no prefix length", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.1"}, "not an address in CIDR form"},
		{"two IPv4", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.1/32,192.0.2.2/32"}, "at most one IPv4 and one IPv6"},
		{"multicast VIP", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "224.0.0.18/32"}, "not a unicast address"},
		{"bad duration", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_INTERVAL": "fast"}, `NOVAEDGE_CP_VIP_HEALTH_INTERVAL (--health-interval)="fast"`},
		{"bad port", map[string]string{"NOVAEDGE_CP_VIP_API_PORT": "70000"}, "NOVAEDGE_CP_VIP_API_PORT"},
		{"port zero", map[string]string{"NOVAEDGE_CP_VIP_API_PORT": "0"}, "NOVAEDGE_CP_VIP_API_PORT (--api-port)=\"0\": must be 1-65535"},
		{"mode", map[string]string{"NOVAEDGE_CP_VIP_MODE": "l3"}, `NOVAEDGE_CP_VIP_MODE (--mode)="l3": must be one of l2, bgp`},
		{"vrid", map[string]string{"NOVAEDGE_CP_VIP_VRID": "256"}, "NOVAEDGE_CP_VIP_VRID (--vrid)=\"256\": must be 1-255"},
		{"priority 255", map[string]string{"NOVAEDGE_CP_VIP_PRIORITY": "255"}, "NOVAEDGE_CP_VIP_PRIORITY"},
		{"priority 1 is fail open's", map[string]string{"NOVAEDGE_CP_VIP_PRIORITY": "1"}, "NOVAEDGE_CP_VIP_PRIORITY (--priority)=\"1\": must be 2-254"},
		{"advert too small", map[string]string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL": "5ms"}, "NOVAEDGE_CP_VIP_ADVERT_INTERVAL"},
		{"advert not centiseconds", map[string]string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL": "105ms"}, "multiple of 10ms"},
		{"no adverts", map[string]string{"NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL": "0"}, "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL"},
		{"adverts closer than 10ms", map[string]string{"NOVAEDGE_CP_VIP_ADVERT_INTERVAL": "50ms", "NOVAEDGE_CP_VIP_ADVERTS_PER_INTERVAL": "6"}, "10ms or more"},
		{"hung after too short", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER": "5ms"}, `NOVAEDGE_CP_VIP_HEALTH_HUNG_AFTER (--health-hung-after)="5ms": must be 0 (off) or 10ms-1m0s`},
		{"etcd port", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS": "2379,0"}, `NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS (--health-etcd-ports)="2379,0": "0" is not a port (1-65535)`},
		{"etcd port twice", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS": "2379, 2379"}, `port 2379 given twice`},
		{"etcd ports, too many", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS": func() string {
			var ps []string
			for p := 1; p <= 65; p++ {
				ps = append(ps, strconv.Itoa(p))
			}
			return strings.Join(ps, ",")
		}()}, "must list at most 64 ports"},
		{"etcd port too big", map[string]string{"NOVAEDGE_CP_VIP_HEALTH_ETCD_PORTS": "65536"}, `"65536" is not a port`},
		{"fail threshold", map[string]string{"NOVAEDGE_CP_VIP_FAIL_THRESHOLD": "0"}, "NOVAEDGE_CP_VIP_FAIL_THRESHOLD"},
		{"peers", map[string]string{"NOVAEDGE_CP_VIP_PEERS": "192.0.2.1,nope"}, `NOVAEDGE_CP_VIP_PEERS (--peers)="192.0.2.1,nope": "nope" is not an IP address`},
		{"peers of each family", map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32,2001:db8::100/128", "NOVAEDGE_CP_VIP_PEERS": "192.0.2.12"}, "no peer of the address family of VIP 2001:db8::100/128"},
		{"garp refresh", map[string]string{"NOVAEDGE_CP_VIP_GARP_REFRESH": "100ms"}, "NOVAEDGE_CP_VIP_GARP_REFRESH"},
		{"spread with no one to spread over", map[string]string{"NOVAEDGE_CP_VIP_SPREAD": "true"}, `NOVAEDGE_CP_VIP_SPREAD_BACKENDS (--spread-backends): is empty and NOVAEDGE_CP_VIP_PEERS has no global unicast address`},
		{"spread over link-local peers only", map[string]string{"NOVAEDGE_CP_VIP_SPREAD": "true", "NOVAEDGE_CP_VIP_ADDRESS": "2001:db8::100/128", "NOVAEDGE_CP_VIP_PEERS": "fe80::12"}, `is empty and NOVAEDGE_CP_VIP_PEERS has no global unicast address`},
		{"spread backend is the VIP", map[string]string{"NOVAEDGE_CP_VIP_SPREAD_BACKENDS": "192.0.2.12,192.0.2.100"}, "192.0.2.100 is a VIP"},
		{"spread backend is the VIP, IPv4-mapped", map[string]string{"NOVAEDGE_CP_VIP_SPREAD_BACKENDS": "192.0.2.12,::ffff:192.0.2.100"}, "192.0.2.100 is a VIP"},
		{"spread over peers that list the VIP", map[string]string{"NOVAEDGE_CP_VIP_SPREAD": "true", "NOVAEDGE_CP_VIP_PEERS": "192.0.2.12,192.0.2.100"}, "NOVAEDGE_CP_VIP_PEERS (--peers)=\"192.0.2.12,192.0.2.100\": 192.0.2.100 is a VIP"},
		{"spread backend twice", map[string]string{"NOVAEDGE_CP_VIP_SPREAD_BACKENDS": "192.0.2.12,192.0.2.12"}, "192.0.2.12 is listed twice"},
		{"spread backend not unicast", map[string]string{"NOVAEDGE_CP_VIP_SPREAD_BACKENDS": "192.0.2.12,224.0.0.1"}, "224.0.0.1 is not a unicast address of a node"},
		{"spread in bgp mode", merge(bgp, map[string]string{"NOVAEDGE_CP_VIP_SPREAD": "true", "NOVAEDGE_CP_VIP_SPREAD_BACKENDS": "192.0.2.12"}), "NOVAEDGE_CP_VIP_SPREAD (--spread)=\"true\": is for l2 mode"},
		{"bgp needs AS", merge(bgp, map[string]string{"NOVAEDGE_BGP_LOCAL_AS": ""}), "NOVAEDGE_BGP_LOCAL_AS"},
		{"AS out of range", merge(bgp, map[string]string{"NOVAEDGE_BGP_LOCAL_AS": "4294967296"}), "NOVAEDGE_BGP_LOCAL_AS"},
		{"router id v6", merge(bgp, map[string]string{"NOVAEDGE_BGP_ROUTER_ID": "2001:db8::1"}), "NOVAEDGE_BGP_ROUTER_ID (--bgp-router-id)=\"2001:db8::1\": must be in IPv4 form"},
		{"bad peer address", merge(bgp, map[string]string{"NOVAEDGE_BGP_PEER_ADDRESS": "router"}), "NOVAEDGE_BGP_PEER_ADDRESS"},
		{"peer list syntax", merge(bgp, map[string]string{"NOVAEDGE_BGP_PEER_ADDRESS": "", "NOVAEDGE_BGP_PEER_AS": "", "NOVAEDGE_BGP_PEERS": "198.51.100.1:65000"}), "want ADDR@AS"},
		{"peer list AS", merge(bgp, map[string]string{"NOVAEDGE_BGP_PEER_ADDRESS": "", "NOVAEDGE_BGP_PEER_AS": "", "NOVAEDGE_BGP_PEERS": "[2001:db8::1]@0"}), "NOVAEDGE_BGP_PEERS"},
		{"peers and peer", merge(bgp, map[string]string{"NOVAEDGE_BGP_PEERS": "198.51.100.2@65000"}), "set one or the other"},
		{"hold time", merge(bgp, map[string]string{"NOVAEDGE_BGP_HOLD_TIME": "2s"}), "NOVAEDGE_BGP_HOLD_TIME"},
		{"community", merge(bgp, map[string]string{"NOVAEDGE_BGP_COMMUNITIES": "65000:70000"}), "NOVAEDGE_BGP_COMMUNITIES"},
		{"bfd auth key", merge(bgp, map[string]string{"NOVAEDGE_BFD_AUTH": "keyed-sha1"}), "NOVAEDGE_BFD_AUTH_KEY (--bfd-auth-key): is required"},
		{"secret redacted", merge(bgp, map[string]string{"NOVAEDGE_BFD_AUTH": "simple", "NOVAEDGE_BFD_AUTH_KEY": "0123456789abcdefXYZ"}), `NOVAEDGE_BFD_AUTH_KEY (--bfd-auth-key)="<redacted>"`},
		{"IPv4 VIP needs an IPv4 peer", merge(bgp, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32,2001:db8::100/128", "NOVAEDGE_BGP_PEER_ADDRESS": "2001:db8::1"}), "NOVAEDGE_BGP_PEER_ADDRESS (--bgp-peer-address)=\"[2001:db8::1]@65000\": no IPv4 peer for VIP 192.0.2.100/32"},
		{"bfd without bgp", map[string]string{"NOVAEDGE_BFD_ENABLED": "true"}, "NOVAEDGE_BFD_ENABLED"},
		{"bfd interval", merge(bgp, map[string]string{"NOVAEDGE_BFD_TX_INTERVAL": "0s"}), "NOVAEDGE_BFD_TX_INTERVAL"},
		{"bfd with multihop", merge(bgp, map[string]string{"NOVAEDGE_BFD_ENABLED": "true", "NOVAEDGE_BGP_MULTIHOP": "2"}), "a multihop BGP peer (198.51.100.1) never passes"},
		{"bfd with a multihop peer", merge(bgp, map[string]string{"NOVAEDGE_BFD_ENABLED": "true", "NOVAEDGE_BGP_PEER_ADDRESS": "", "NOVAEDGE_BGP_PEER_AS": "",
			"NOVAEDGE_BGP_PEERS": "198.51.100.1@65000,198.51.100.2@65000?multihop=3"}), "NOVAEDGE_BFD_ENABLED (--bfd)=\"true\": BFD here is single hop"},
		{"empty number is unset", map[string]string{"NOVAEDGE_CP_VIP_VRID": " ", "NOVAEDGE_CP_VIP_PRIORITY": "0"}, "NOVAEDGE_CP_VIP_PRIORITY"},
		{"metrics addr", map[string]string{"NOVAEDGE_CP_VIP_METRICS_ADDR": "9450"}, "NOVAEDGE_CP_VIP_METRICS_ADDR"},
		{"log level", map[string]string{"NOVAEDGE_CP_VIP_LOG_LEVEL": "verbose"}, "NOVAEDGE_CP_VIP_LOG_LEVEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := merge(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32"}, tt.env)
			if tt.env == nil {
				env = nil
			}
			_, err := load(t, env)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want *config.Error", err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "0123456789abcdefXYZ") {
				t.Errorf("error leaks a secret: %q", err)
			}
		})
	}
}

func TestBGPConfig(t *testing.T) {
	c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "BGP",
		"NOVAEDGE_BGP_LOCAL_AS": "4200000000", "NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11",
		"NOVAEDGE_BGP_PEERS": "198.51.100.1@65000, [2001:db8::1]@65000,2001:db8::2@65001", "NOVAEDGE_BGP_COMMUNITIES": "65000:100,0:65535"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.BGPPeerList().String(); got != "198.51.100.1@65000,[2001:db8::1]@65000,[2001:db8::2]@65001" {
		t.Errorf("peers = %s", got)
	}
	if c.BGPCommunities[0].Uint32() != 65000<<16|100 || c.BGPLocalAS != 4200000000 || c.Mode != ModeBGP {
		t.Errorf("got %+v", c)
	}
}

// TestIPv6VIPOverIPv4Sessions: a dual-stack VIP with IPv4 peers only is
// valid (the IPv6 route goes over the IPv4 sessions, MP-BGP), as kube-vip
// manifests have it; with an IPv6 peer it goes over that one.
func TestIPv6VIPOverIPv4Sessions(t *testing.T) {
	env := map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32,2001:db8:ffff::100/128", "NOVAEDGE_CP_VIP_MODE": "bgp",
		"NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "198.51.100.11", "NOVAEDGE_BGP_PEERS": "192.0.2.1@65001,198.51.100.1@65001"}
	c, err := load(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IPv6OverIPv4() {
		t.Error("IPv6OverIPv4 = false with IPv4 peers only")
	}
	c, err = load(t, merge(env, map[string]string{"NOVAEDGE_BGP_PEERS": "192.0.2.1@65001,[2001:db8::1]@65001"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.IPv6OverIPv4() {
		t.Error("IPv6OverIPv4 = true with an IPv6 peer")
	}
}

func TestUnknownEnvWarns(t *testing.T) {
	isolateEnv(t)
	t.Setenv("NOVAEDGE_CP_VIP_ADDRESS", "192.0.2.100/32")
	t.Setenv("NOVAEDGE_CP_VIP_ADRESS", "x")
	_, warns, err := Load(nil)
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "NOVAEDGE_CP_VIP_ADRESS") {
		t.Errorf("warnings %v, err %v", warns, err)
	}
}

func TestInsecureSkipTLSVerifyWarns(t *testing.T) {
	isolateEnv(t)
	t.Setenv("NOVAEDGE_CP_VIP_ADDRESS", "192.0.2.100/32")
	t.Setenv("NOVAEDGE_CP_VIP_INSECURE_SKIP_TLS_VERIFY", "true")
	c, warns, err := Load(nil)
	if err != nil || !c.InsecureSkipTLSVerify || len(warns) != 1 || !strings.Contains(warns[0], "token goes to whatever listens") {
		t.Errorf("warnings %v, err %v", warns, err)
	}
}

func TestFieldsComplete(t *testing.T) {
	seenEnv, seenFlag := map[string]bool{}, map[string]bool{}
	for _, f := range Fields() {
		if f.Env == "" || f.Flag == "" || f.Desc == "" {
			t.Errorf("field %s lacks an env name, flag or description", f.Name)
		}
		if seenEnv[f.Env] || seenFlag[f.Flag] {
			t.Errorf("field %s repeats %s or --%s", f.Name, f.Env, f.Flag)
		}
		seenEnv[f.Env], seenFlag[f.Flag] = true, true
	}
	// The spec's table (38) plus the drain switch and the fast re-check interval that its
	// health section asks for, the fail-open switch, the address conflict check's, and
	// the advertisements per interval (issue 35: loss without false takeovers) and the
	// hung apiserver's (issue 35: etcd stopped under it found in a second), and the
	// backups' wait for a master whose host still answers (issue 35: our own restart
	// moves nothing at a short advertisement interval), and spreading's switch and
	// backends (issue 36: every healthy apiserver serves), and etcd's ports, whose
	// sockets tell a lossy network's stall from a hung etcd (issue 35: 5 % loss).
	if len(Fields()) != 48 {
		t.Errorf("%d variables, want the spec's 38 + 10", len(Fields()))
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestLoadLeavesEnvironmentAsItWas(t *testing.T) {
	_, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32"}, "--vrid", "9")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := os.LookupEnv("NOVAEDGE_CP_VIP_VRID"); ok {
		t.Errorf("NOVAEDGE_CP_VIP_VRID=%q left in the environment by a flag", v)
	}
	if c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_METRICS_ADDR": ""}); err != nil || c.MetricsAddr != "" {
		t.Errorf("empty metrics address must turn the endpoints off: %q, %v", c.MetricsAddr, err)
	}
}

// TestPeerOptions: per-peer password and multihop after "?"; ADDR@AS alone
// stays valid; passwords never in String(), errors or check-config.
func TestPeerOptions(t *testing.T) {
	for _, tt := range []struct {
		in, syntax, shown string
		err               string
	}{
		{in: "192.0.2.1@65001", syntax: "192.0.2.1@65001", shown: "192.0.2.1@65001"},
		{in: "192.0.2.1@65001?password=s3%2Ccret&multihop=2", syntax: "192.0.2.1@65001?password=s3%2Ccret&multihop=2",
			shown: "192.0.2.1@65001?password=<redacted>&multihop=2"},
		{in: "[2001:db8::1]@65001?multihop=255", syntax: "[2001:db8::1]@65001?multihop=255", shown: "[2001:db8::1]@65001?multihop=255"},
		{in: "192.0.2.1@65001?password=a b", syntax: "192.0.2.1@65001?password=a%20b", shown: "192.0.2.1@65001?password=<redacted>"},
		{in: "192.0.2.1@65001?password=a+b", syntax: "192.0.2.1@65001?password=a%2Bb", shown: "192.0.2.1@65001?password=<redacted>"},
		{in: "192.0.2.1@65001?multihop=0", err: "192.0.2.1: option 1: multihop: want a TTL 1-255"},
		{in: "192.0.2.1@65001?ttl=3", err: "option 1: unknown option (known: password, multihop)"},
		{in: "192.0.2.1@65001?password=x&password=y", err: "option 2: password given twice"},
		{in: "192.0.2.1@65001?password=x&y", err: "option 2: want NAME=VALUE"},
		{in: "192.0.2.1@65001?password=", err: "want NAME=VALUE"},
		{in: "192.0.2.1@65001?password=%zz", err: "bad percent-encoding"},
	} {
		p, err := ParseBGPPeer(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || p.Syntax() != tt.syntax || p.String() != tt.shown {
			t.Errorf("%q: %q / %q, %v; want %q / %q", tt.in, p.Syntax(), p.String(), err, tt.syntax, tt.shown)
		}
	}
	// A bad entry in the list: the error names the variable, never the passwords.
	_, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "bgp",
		"NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "192.0.2.11",
		"NOVAEDGE_BGP_PEERS": "192.0.2.1@65001?password=topsecret,192.0.2.2@65001?password=hunter2&multihop=300"})
	if err == nil || strings.Contains(err.Error(), "topsecret") || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "NOVAEDGE_BGP_PEERS") {
		t.Errorf("error %v: want NOVAEDGE_BGP_PEERS named and no password", err)
	}
	c, err := load(t, map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "bgp",
		"NOVAEDGE_BGP_LOCAL_AS": "65002", "NOVAEDGE_BGP_ROUTER_ID": "192.0.2.11",
		"NOVAEDGE_BGP_PEERS": "192.0.2.1@65001?password=topsecret,192.0.2.2@65001?password=hunter2&multihop=3"})
	if err != nil {
		t.Fatal(err)
	}
	if d := Describe(c); strings.Contains(d, "topsecret") || strings.Contains(d, "hunter2") {
		t.Errorf("check-config shows a password:\n%s", d)
	}
	if got := c.BGPPeers[1]; got.Password != "hunter2" || got.Multihop != 3 {
		t.Errorf("second peer %+v", got)
	}
}

func TestVIPPrefixRules(t *testing.T) {
	base := map[string]string{"NOVAEDGE_BGP_LOCAL_AS": "65001", "NOVAEDGE_BGP_ROUTER_ID": "192.0.2.11",
		"NOVAEDGE_BGP_PEER_ADDRESS": "192.0.2.1", "NOVAEDGE_BGP_PEER_AS": "65000"}
	for _, tt := range []struct {
		vip, mode string
		ok        bool
	}{
		{"192.0.2.100/32", "bgp", true},
		{"2001:db8::100/128", "bgp", true},
		{"192.0.2.100/24", "bgp", false},
		{"2001:db8::100/64", "bgp", false},
		{"192.0.2.100/24", "l2", true}, // checked against the interface at start
	} {
		env := maps.Clone(base)
		env["NOVAEDGE_CP_VIP_ADDRESS"], env["NOVAEDGE_CP_VIP_MODE"] = tt.vip, tt.mode
		_, err := LoadMap(env)
		if (err == nil) != tt.ok {
			t.Errorf("%s in %s mode: error %v, want ok=%v", tt.vip, tt.mode, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "NOVAEDGE_CP_VIP_ADDRESS") {
			t.Errorf("error %q does not name the variable", err)
		}
	}
}

func TestValidateOnInterface(t *testing.T) {
	addrs := []netip.Prefix{netip.MustParsePrefix("192.0.2.11/24"), netip.MustParsePrefix("2001:db8::11/64")}
	for _, tt := range []struct {
		vip    string
		config bool // an invalid configuration
		wait   bool // no address of the subnet yet
	}{
		{"192.0.2.100/32", false, false},
		{"192.0.2.100/24", false, false},
		{"2001:db8::100/64", false, false},
		{"192.0.2.100/25", true, false},
		{"192.0.2.100/16", true, false},
		{"198.51.100.100/24", false, true},
	} {
		c := &Config{VIPAddress: PrefixList{netip.MustParsePrefix(tt.vip)}}
		err := c.ValidateOnInterface("eth0", addrs)
		var ce *Error
		if got := errors.As(err, &ce); got != tt.config {
			t.Errorf("%s: error %v, config error %v, want %v", tt.vip, err, got, tt.config)
		}
		if got := errors.Is(err, ErrNoSubnetAddress); got != tt.wait {
			t.Errorf("%s: error %v, waiting %v, want %v", tt.vip, err, got, tt.wait)
		}
	}
}

// TestUnparsablePeerListIsNeverEchoed: a peer list that does not parse is
// not repeated, whatever spelling its password has (issue 33: Password=,
// password: and password%3D were echoed; only password= was redacted).
func TestUnparsablePeerListIsNeverEchoed(t *testing.T) {
	for _, v := range []string{
		"192.0.2.1@65001?Password=QXZJsecret",
		"192.0.2.1@65001?password:QXZJsecret",
		"192.0.2.1@65001?password%3DQXZJsecret",
		"192.0.2.1@65001&password=QXZJsecret",
		"192.0.2.1@QXZJsecret",
		"QXZJsecret@65001",
		"192.0.2.1@65001?pwd=QXZJsecret,192.0.2.2@65002",
		"192.0.2.1@65001?multihop=QXZJsecret",
	} {
		_, err := LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "bgp",
			"NOVAEDGE_BGP_LOCAL_AS": "65001", "NOVAEDGE_BGP_ROUTER_ID": "192.0.2.11", "NOVAEDGE_BGP_PEERS": v})
		if err == nil {
			t.Errorf("%q: accepted", v)
			continue
		}
		if strings.Contains(err.Error(), "QXZJ") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: error repeats the password: %v", v, err)
		}
		if !strings.Contains(err.Error(), "NOVAEDGE_BGP_PEERS") || !strings.Contains(err.Error(), "peer ") {
			t.Errorf("%q: error does not name the variable and the peer: %v", v, err)
		}
	}
}

// Dual-stack VIPs need unicast peers of both families; spreading takes
// one family of them, or each node would be two backends.
func TestSpreadBackendListOneFamilyOfPeers(t *testing.T) {
	a := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	c := Config{Peers: AddrList{a("2001:db8::12"), a("192.0.2.12"), a("fe80::13"), a("2001:db8::13"), a("192.0.2.13")}}
	if got := c.SpreadBackendList(); !slices.Equal(got, []netip.Addr{a("192.0.2.12"), a("192.0.2.13")}) {
		t.Errorf("dual-stack peers: %v, want the IPv4 ones", got)
	}
	c.Peers = AddrList{a("fe80::12"), a("2001:db8::12")}
	if got := c.SpreadBackendList(); !slices.Equal(got, []netip.Addr{a("2001:db8::12")}) {
		t.Errorf("IPv6 peers: %v, want the global one", got)
	}
}
