package config

import (
	"fmt"
	"log/slog"
	"net/netip"
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
		out = append(out, ip)
	}
	*a = out
	return nil
}

// String returns the list in its configuration syntax.
func (a AddrList) String() string { return joinStrings(a) }

// BGPPeer is one BGP neighbour.
type BGPPeer struct {
	Address netip.Addr
	AS      uint32
}

// String returns the peer in ADDR@AS syntax, IPv6 in brackets.
func (p BGPPeer) String() string {
	if p.Address.Is6() {
		return "[" + p.Address.String() + "]@" + strconv.FormatUint(uint64(p.AS), 10)
	}
	return p.Address.String() + "@" + strconv.FormatUint(uint64(p.AS), 10)
}

// ParseBGPPeer parses ADDR@AS; an IPv6 address may stand in brackets.
func ParseBGPPeer(s string) (BGPPeer, error) {
	addr, as, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok {
		return BGPPeer{}, fmt.Errorf("peer %q: want ADDR@AS", s)
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		return BGPPeer{}, fmt.Errorf("peer %q: %q is not an IP address", s, addr)
	}
	n, err := parseAS(as)
	if err != nil {
		return BGPPeer{}, fmt.Errorf("peer %q: %w", s, err)
	}
	return BGPPeer{Address: ip.Unmap(), AS: n}, nil
}

func parseAS(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("AS %q must be a number 1-4294967295", s)
	}
	return uint32(n), nil
}

// PeerList is a comma-separated list of BGP peers (ADDR@AS).
type PeerList []BGPPeer

// Decode implements envconfig.Decoder.
func (l *PeerList) Decode(s string) error {
	var out PeerList
	for _, f := range splitList(s) {
		p, err := ParseBGPPeer(f)
		if err != nil {
			return err
		}
		out = append(out, p)
	}
	*l = out
	return nil
}

// String returns the list in its configuration syntax.
func (l PeerList) String() string { return joinStrings(l) }

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

func joinStrings[T fmt.Stringer](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.String()
	}
	return strings.Join(s, ",")
}
