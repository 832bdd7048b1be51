package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Mode selects how the VIP is made reachable.
type Mode string

// The modes of NOVAEDGE_CP_VIP_MODE.
const (
	ModeL2  Mode = "l2"
	ModeBGP Mode = "bgp"
)

// Decode implements envconfig.Decoder.
func (m *Mode) Decode(s string) error {
	return decodeEnum((*string)(m), s, string(ModeL2), string(ModeBGP))
}

// LogFormat is the log output format.
type LogFormat string

// Decode implements envconfig.Decoder.
func (f *LogFormat) Decode(s string) error {
	return decodeEnum((*string)(f), s, "text", "json")
}

// BFDAuth is the BFD authentication type.
type BFDAuth string

// The BFD authentication types of NOVAEDGE_BFD_AUTH.
const (
	BFDAuthNone           BFDAuth = "none"
	BFDAuthSimple         BFDAuth = "simple"
	BFDAuthKeyedSHA1      BFDAuth = "keyed-sha1"
	BFDAuthMeticulousSHA1 BFDAuth = "meticulous-sha1"
)

// Decode implements envconfig.Decoder.
func (a *BFDAuth) Decode(s string) error {
	return decodeEnum((*string)(a), s, string(BFDAuthNone), string(BFDAuthSimple),
		string(BFDAuthKeyedSHA1), string(BFDAuthMeticulousSHA1))
}

func decodeEnum(dst *string, s string, allowed ...string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	for _, a := range allowed {
		if v == a {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
}

// LogLevel is one of the four slog levels by name.
type LogLevel slog.Level

// Decode implements envconfig.Decoder.
func (l *LogLevel) Decode(s string) error {
	var name string
	if err := decodeEnum(&name, s, "debug", "info", "warn", "error"); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(name)); err != nil {
		return err
	}
	*l = LogLevel(lv)
	return nil
}

// String returns the level's name.
func (l LogLevel) String() string { return strings.ToLower(slog.Level(l).String()) }

// splitList splits a comma-separated list, trimming blanks and dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// PrefixList is a comma-separated list of prefixes in CIDR form.
type PrefixList []netip.Prefix

// Decode implements envconfig.Decoder.
func (p *PrefixList) Decode(s string) error {
	var out PrefixList
	for _, f := range splitList(s) {
		pfx, err := netip.ParsePrefix(f)
		if err != nil {
			return fmt.Errorf("%q is not an address in CIDR form (like 192.0.2.100/32)", f)
		}
		out = append(out, pfx)
	}
	*p = out
	return nil
}

// String returns the list in its configuration syntax.
func (p PrefixList) String() string { return joinStrings(p) }

// AddrList is a comma-separated list of IP addresses.
type AddrList []netip.Addr

// Decode implements envconfig.Decoder.
func (a *AddrList) Decode(s string) error {
	var out AddrList
	for _, f := range splitList(s) {
		ip, err := netip.ParseAddr(f)
		if err != nil {
			return fmt.Errorf("%q is not an IP address", f)
		}
		out = append(out, ip.Unmap()) // ::ffff:192.0.2.1 is 192.0.2.1: one address, one spelling
	}
	*a = out
	return nil
}

// String returns the list in its configuration syntax.
func (a AddrList) String() string { return joinStrings(a) }

// PortList is a comma-separated list of TCP ports, 1-65535, each once.
type PortList []uint16

// Decode implements envconfig.Decoder.
func (l *PortList) Decode(s string) error {
	var out PortList
	for _, f := range splitList(s) {
		p, err := strconv.ParseUint(f, 10, 16)
		if err != nil || p == 0 {
			return fmt.Errorf("%q is not a port (1-65535)", f)
		}
		if slices.Contains(out, uint16(p)) {
			return fmt.Errorf("port %d given twice", p)
		}
		out = append(out, uint16(p))
	}
	*l = out
	return nil
}

// String returns the list in its configuration syntax.
func (l PortList) String() string {
	return join(l, func(p uint16) string { return strconv.Itoa(int(p)) })
}

// BGPPeer is one BGP neighbour, with options of its own.
type BGPPeer struct {
	Address  netip.Addr
	AS       uint32
	Password string // TCP MD5 for this peer; empty = NOVAEDGE_BGP_PASSWORD
	Multihop int    // eBGP multihop TTL for this peer, 1-255; 0 = NOVAEDGE_BGP_MULTIHOP
}

// String returns the peer in configuration syntax with its password
// redacted: this is the form that logs, errors and check-config show.
func (p BGPPeer) String() string { return p.format(true) }

// Syntax returns the peer in configuration syntax, password included
// (percent-encoded): ADDR@AS[?password=P][&multihop=N], IPv6 in brackets.
func (p BGPPeer) Syntax() string { return p.format(false) }

func (p BGPPeer) format(redact bool) string {
	addr := p.Address.String()
	if p.Address.Is6() {
		addr = "[" + addr + "]"
	}
	s := addr + "@" + strconv.FormatUint(uint64(p.AS), 10)
	var opts []string
	if p.Password != "" {
		v := strings.ReplaceAll(url.QueryEscape(p.Password), "+", "%20") // read back with PathUnescape
		if redact {
			v = redacted
		}
		opts = append(opts, "password="+v)
	}
	if p.Multihop > 0 {
		opts = append(opts, "multihop="+strconv.Itoa(p.Multihop))
	}
	if len(opts) > 0 {
		s += "?" + strings.Join(opts, "&")
	}
	return s
}

// redacted stands for a secret in what the daemon prints.
const redacted = "<redacted>"

// maxMD5Password is the longest TCP MD5 key (Linux TCP_MD5SIG_MAXKEYLEN).
const maxMD5Password = 80

// A peer list may hold passwords in any spelling a user can get wrong
// (Password=, password:, password%3D, a missing & or ?), so what does not
// parse is never repeated: an error names the peer by its position (and
// its address once that parsed), the option by its position (and its name
// once it is a known one), and what is wrong — never a piece of the text.

// ParseBGPPeer parses ADDR@AS[?OPTIONS]; an IPv6 address may stand in
// brackets. OPTIONS are password=P (TCP MD5, percent-encoded: %2C for a
// comma, %26 for &, %25 for %; a literal + is a +) and multihop=N (eBGP
// multihop TTL 1-255), joined by &. Its errors repeat nothing of s but an
// address that parsed.
func ParseBGPPeer(s string) (BGPPeer, error) {
	base, query, hasOpts := strings.Cut(strings.TrimSpace(s), "?")
	addr, as, ok := strings.Cut(base, "@")
	if !ok {
		return BGPPeer{}, errors.New("want ADDR@AS[?OPTIONS]")
	}
	ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"))
	if err != nil || ip.Zone() != "" {
		return BGPPeer{}, errors.New("the address is not an IP address (want ADDR@AS, IPv6 in brackets)")
	}
	p := BGPPeer{Address: ip.Unmap()}
	n, err := strconv.ParseUint(as, 10, 32)
	if err != nil || n == 0 {
		return BGPPeer{}, fmt.Errorf("%s: the AS must be a number 1-4294967295", p.Address)
	}
	p.AS = uint32(n)
	if hasOpts {
		if err := p.parseOptions(query); err != nil {
			return BGPPeer{}, fmt.Errorf("%s: %w", p.Address, err)
		}
	}
	return p, nil
}

// parseOptions reads the per-peer options after the "?".
func (p *BGPPeer) parseOptions(query string) error {
	seen := map[string]bool{}
	for n, kv := range strings.Split(query, "&") {
		if err := p.parseOption(kv, seen); err != nil {
			return fmt.Errorf("option %d: %w", n+1, err)
		}
	}
	return nil
}

// parseOption reads one NAME=VALUE option.
func (p *BGPPeer) parseOption(kv string, seen map[string]bool) error {
	k, v, ok := strings.Cut(kv, "=")
	switch {
	case !ok || v == "":
		return errors.New("want NAME=VALUE (known: password, multihop; percent-encode ',' '&' '%' in a password as %2C %26 %25)")
	case k != "password" && k != "multihop":
		return errors.New("unknown option (known: password, multihop)")
	case seen[k]:
		return fmt.Errorf("%s given twice", k)
	}
	seen[k] = true
	switch k {
	case "password":
		pw, err := url.PathUnescape(v) // not QueryUnescape: a + stays a +
		if err != nil {
			return errors.New("password: bad percent-encoding")
		}
		if len(pw) > maxMD5Password {
			return fmt.Errorf("password: at most %d bytes (TCP MD5)", maxMD5Password)
		}
		p.Password = pw
	case "multihop":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 255 {
			return errors.New("multihop: want a TTL 1-255")
		}
		p.Multihop = n
	}
	return nil
}

// PeerList is a comma-separated list of BGP peers (ADDR@AS[?OPTIONS]).
type PeerList []BGPPeer

// Decode implements envconfig.Decoder. Its errors name the peer by its
// position and repeat nothing of s but an address that parsed.
func (l *PeerList) Decode(s string) error {
	var out PeerList
	for n, f := range splitList(s) {
		p, err := ParseBGPPeer(f)
		if err != nil {
			return fmt.Errorf("peer %d: %w", n+1, err)
		}
		out = append(out, p)
	}
	*l = out
	return nil
}

// String returns the list in its configuration syntax, passwords redacted.
func (l PeerList) String() string { return joinStrings(l) }

// Syntax returns the list in its configuration syntax, passwords included.
func (l PeerList) Syntax() string { return join(l, BGPPeer.Syntax) }

// Community is a standard BGP community AS:VAL.
type Community struct{ AS, Value uint16 }

// Uint32 returns the community in its wire form.
func (c Community) Uint32() uint32 { return uint32(c.AS)<<16 | uint32(c.Value) }

// String returns the community as AS:VAL.
func (c Community) String() string { return fmt.Sprintf("%d:%d", c.AS, c.Value) }

// ParseCommunity parses a standard community AS:VAL (each 0-65535).
func ParseCommunity(s string) (Community, error) {
	as, val, ok := strings.Cut(strings.TrimSpace(s), ":")
	a, errA := strconv.ParseUint(as, 10, 16)
	v, errV := strconv.ParseUint(val, 10, 16)
	if !ok || errA != nil || errV != nil {
		return Community{}, fmt.Errorf("community %q: want AS:VAL with both 0-65535", s)
	}
	return Community{AS: uint16(a), Value: uint16(v)}, nil
}

// Communities is a comma-separated list of standard communities.
type Communities []Community

// Decode implements envconfig.Decoder.
func (cs *Communities) Decode(s string) error {
	var out Communities
	for _, f := range splitList(s) {
		c, err := ParseCommunity(f)
		if err != nil {
			return err
		}
		out = append(out, c)
	}
	*cs = out
	return nil
}

// String returns the list in its configuration syntax.
func (cs Communities) String() string { return joinStrings(cs) }

func joinStrings[T fmt.Stringer](items []T) string { return join(items, T.String) }

// join formats every item with f and joins them with commas.
func join[T any](items []T, f func(T) string) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = f(it)
	}
	return strings.Join(s, ",")
}
