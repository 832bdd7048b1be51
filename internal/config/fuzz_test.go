package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/novaedge/cpvip/internal/leakcheck"
)

func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{"A=1\n", "# c\nNOVAEDGE_CP_VIP_ADDRESS=\"192.0.2.1/32\"\n", "export X='y'\n", "=\n", "A=\"\n", "A=\"\\\"\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vars, err := ParseEnvFile(strings.NewReader(s))
		if err != nil {
			return
		}
		for k := range vars {
			if !validKey(k) {
				t.Fatalf("accepted invalid key %q", k)
			}
		}
	})
}

func FuzzPeerList(f *testing.F) {
	for _, s := range []string{"198.51.100.1@65000", "[2001:db8::1]@65000,198.51.100.2@1", "x@y", "@", "[::]@4294967295", "1.2.3.4@",
		"192.0.2.1@65001?password=s3%2Ccret&multihop=2", "192.0.2.1@1?multihop=0", "192.0.2.1@1?password=", "192.0.2.1@1?password=a&password=b", "192.0.2.1@1?x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var l PeerList
		if err := l.Decode(s); err != nil {
			return
		}
		// What we accept prints back to something we accept with the same meaning.
		var again PeerList
		if err := again.Decode(l.Syntax()); err != nil || again.Syntax() != l.Syntax() {
			t.Fatalf("round trip of %q: %q -> %v %q", s, l.Syntax(), err, again.Syntax())
		}
		for _, p := range l {
			if p.AS == 0 || !p.Address.IsValid() || p.Multihop < 0 || p.Multihop > 255 {
				t.Fatalf("accepted %q as %+v", s, p)
			}
		}
		if n := strings.Count(l.String(), "password="); n != strings.Count(l.String(), "password="+redacted) {
			t.Fatalf("String() of %q shows a password: %s", s, l.String())
		}
	})
}

func FuzzListDecoders(f *testing.F) {
	for _, s := range []string{"192.0.2.1/32,2001:db8::1/128", "65000:1, 0:0", "192.0.2.1", " , ,", "1:2:3", "2379,2380", "0", "65536", "1,1", "+5", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p PrefixList
		if p.Decode(s) == nil {
			var again PrefixList
			if err := again.Decode(p.String()); err != nil || again.String() != p.String() {
				t.Fatalf("prefix round trip of %q failed: %v", s, err)
			}
		}
		var a AddrList
		_ = a.Decode(s)
		var c Communities
		if c.Decode(s) == nil {
			var again Communities
			if err := again.Decode(c.String()); err != nil || again.String() != c.String() {
				t.Fatalf("community round trip of %q failed: %v", s, err)
			}
		}
		var ports PortList
		if ports.Decode(s) == nil {
			var again PortList
			if err := again.Decode(ports.String()); err != nil || !slices.Equal(again, ports) {
				t.Fatalf("port list round trip of %q failed: %v", s, err)
			}
			if slices.Contains(ports, 0) || len(slices.Compact(slices.Sorted(slices.Values(ports)))) != len(ports) {
				t.Fatalf("accepted %q as %v: a zero or repeated port", s, ports)
			}
		}
	})
}

// FuzzReload: whatever the env file holds when it is read again, a reload
// returns a valid configuration or an error; it never panics and never
// changes the process environment.
func FuzzReload(f *testing.F) {
	for _, s := range []string{"NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/32\n", "NOVAEDGE_CP_VIP_ADDRESS=192.0.2.100/24\nNOVAEDGE_CP_VIP_MODE=bgp\n",
		"NOVAEDGE_CP_VIP_HEALTH_TIMEOUT=1000h\n", "NOVAEDGE_CP_VIP_NOPE=1\n", "NOVAEDGE_CP_VIP_PRIORITY='300'\n", "\x00=\n"} {
		f.Add(s)
	}
	path := filepath.Join(f.TempDir(), "cpvip.env")
	f.Fuzz(func(t *testing.T, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		r := &Reloader{fl: &Flags{EnvFile: path, set: map[string]string{}}}
		before := os.Environ()
		c, err := r.Load()
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("reload returned an invalid configuration: %v", verr)
			}
		}
		if !slices.Equal(before, os.Environ()) {
			t.Fatal("reload changed the process environment")
		}
	})
}

// FuzzSecretsNeverEchoed: whatever a peer list around a password looks like
// — the option spelt any way (Password=, password:, password%3D, no ?),
// unencoded ',' '&' '+' '%' inside the password — no error of the peer
// list decoder or of Load repeats any piece of the password.
func FuzzSecretsNeverEchoed(f *testing.F) {
	f.Add("192.0.2.1@65001?", "password=", []byte("QX,ZJ&W"), "&multihop=2")
	f.Add("192.0.2.1@65001?multihop=2&", "password=", []byte("QXZ,192.0.2.2@1"), ",[2001:db8::1]@65002")
	f.Add("", "password=", []byte("QXZJ"), "")
	f.Add("192.0.2.1@65001?", "Password=", []byte("QXZJ"), "")
	f.Add("192.0.2.1@65001?", "password:", []byte("QXZJ"), "")
	f.Add("192.0.2.1@65001?", "password%3D", []byte("QXZJ"), "")
	f.Add("192.0.2.1@65001&", "password=", []byte("QXZJ"), "")
	f.Fuzz(func(t *testing.T, before, key string, raw []byte, after string) {
		secret := leakcheck.Secret(raw)
		value := before + key + secret + after
		var l PeerList
		if err := l.Decode(value); err != nil {
			if w := leakcheck.Fragment(err.Error(), value, secret, 3); w != "" {
				t.Fatalf("Decode(%q): error %q repeats %q of the password", value, err, w)
			}
		}
		_, err := LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_CP_VIP_MODE": "bgp",
			"NOVAEDGE_BGP_LOCAL_AS": "65001", "NOVAEDGE_BGP_ROUTER_ID": "192.0.2.11", "NOVAEDGE_BGP_PEERS": value})
		if err != nil {
			if w := leakcheck.Fragment(err.Error(), value, secret, 3); w != "" {
				t.Fatalf("Load(NOVAEDGE_BGP_PEERS=%q): error %q repeats %q of the password", value, err, w)
			}
		}
		_, err = LoadMap(map[string]string{"NOVAEDGE_CP_VIP_ADDRESS": "192.0.2.100/32", "NOVAEDGE_BGP_PASSWORD": secret + after})
		if err != nil {
			if w := leakcheck.Fragment(err.Error(), secret+after, secret, 3); w != "" {
				t.Fatalf("Load(NOVAEDGE_BGP_PASSWORD): error %q repeats %q", err, w)
			}
		}
	})
}
