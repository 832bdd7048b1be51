package vrrp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"
)

var (
	src4 = netip.MustParseAddr("192.0.2.11")
	src6 = netip.MustParseAddr("fe80::1")
	vip4 = netip.MustParseAddr("192.0.2.100")
	vip6 = netip.MustParseAddr("2001:db8::100")
)

func TestMarshalKnownBytes(t *testing.T) {
	a := Advertisement{VRID: 51, Priority: 100, Interval: 100, Addresses: []netip.Addr{vip4}}
	got := a.Marshal(nil, src4, GroupV4)
	want := []byte{0x31, 51, 100, 1, 0x00, 0x64, 0, 0, 192, 0, 2, 100}
	// Checksum by hand: pseudo-header (src, dst, protocol 112, length 12) plus the message.
	var s uint32 = 0xc000 + 0x020b + 0xe000 + 0x0012 + 112 + 12
	s += 0x3133 + 0x6401 + 0x0064 + 0xc000 + 0x0264
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	binary.BigEndian.PutUint16(want[6:], ^uint16(s))
	if !slices.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		src, dst netip.Addr
		addrs    []netip.Addr
	}{
		{src4, GroupV4, []netip.Addr{vip4}},
		{src4, netip.MustParseAddr("192.0.2.12"), []netip.Addr{vip4, netip.MustParseAddr("192.0.2.101")}},
		{src6, GroupV6, []netip.Addr{vip6}},
	} {
		a := Advertisement{VRID: 7, Priority: 254, Interval: 4095, Addresses: tt.addrs}
		b := a.Marshal(nil, tt.src, tt.dst)
		got, err := Parse(b, tt.src, tt.dst)
		if err != nil {
			t.Fatalf("%v: %v", tt.addrs, err)
		}
		if got.VRID != 7 || got.Priority != 254 || got.Interval != 4095 || !slices.Equal(got.Addresses, tt.addrs) {
			t.Errorf("round trip: %+v", got)
		}
		if got.IntervalDuration() != 40950*time.Millisecond {
			t.Errorf("interval %s", got.IntervalDuration())
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := (&Advertisement{VRID: 51, Priority: 100, Interval: 100, Addresses: []netip.Addr{vip4}}).Marshal(nil, src4, GroupV4)
	mutate := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	tests := []struct {
		name string
		b    []byte
		src  netip.Addr
		dst  netip.Addr
		want Reason
	}{
		{"short", good[:7], src4, GroupV4, DropShort},
		{"version 2", mutate(func(b []byte) []byte { b[0] = 0x21; return b }), src4, GroupV4, DropVersion},
		{"type 2", mutate(func(b []byte) []byte { b[0] = 0x32; return b }), src4, GroupV4, DropType},
		{"count too large", mutate(func(b []byte) []byte { b[3] = 2; return b }), src4, GroupV4, DropLength},
		{"count zero", mutate(func(b []byte) []byte { b[3] = 0; return b }), src4, GroupV4, DropLength},
		{"truncated address", good[:10], src4, GroupV4, DropLength},
		{"bad checksum", mutate(func(b []byte) []byte { b[2] = 99; return b }), src4, GroupV4, DropChecksum},
		{"other source", good, netip.MustParseAddr("192.0.2.12"), GroupV4, DropChecksum},
		{"IPv4 bytes as IPv6", good, src6, GroupV6, DropLength},
	}
	for _, tt := range tests {
		_, err := Parse(tt.b, tt.src, tt.dst)
		var r Reason
		if !errors.As(err, &r) || r != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}

func TestChecksumWithoutPseudoHeaderAcceptedForIPv4Only(t *testing.T) {
	b := (&Advertisement{VRID: 51, Priority: 100, Interval: 100, Addresses: []netip.Addr{vip4}}).Marshal(nil, src4, GroupV4)
	binary.BigEndian.PutUint16(b[6:], 0)
	binary.BigEndian.PutUint16(b[6:], ^fold(sum(b)))
	if _, err := Parse(b, src4, GroupV4); err != nil {
		t.Errorf("IPv4 checksum without pseudo-header: %v", err)
	}
	b6 := (&Advertisement{VRID: 51, Priority: 100, Interval: 100, Addresses: []netip.Addr{vip6}}).Marshal(nil, src6, GroupV6)
	binary.BigEndian.PutUint16(b6[6:], 0)
	binary.BigEndian.PutUint16(b6[6:], ^fold(sum(b6)))
	if _, err := Parse(b6, src6, GroupV6); !errors.Is(err, DropChecksum) {
		t.Errorf("IPv6 without pseudo-header: %v, want checksum drop", err)
	}
}

func TestCentiseconds(t *testing.T) {
	for d, want := range map[time.Duration]uint16{time.Second: 100, 10 * time.Millisecond: 1, 0: 1, time.Hour: 4095, 40950 * time.Millisecond: 4095} {
		if got := Centiseconds(d); got != want {
			t.Errorf("Centiseconds(%s) = %d, want %d", d, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add((&Advertisement{VRID: 51, Priority: 100, Interval: 100, Addresses: []netip.Addr{vip4}}).Marshal(nil, src4, GroupV4), false)
	f.Add((&Advertisement{VRID: 1, Priority: 0, Interval: 1, Addresses: []netip.Addr{vip6}}).Marshal(nil, src6, GroupV6), true)
	f.Add([]byte{0x31, 1, 1, 1, 0, 1, 0, 0}, false)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		src, dst := src4, GroupV4
		if v6 {
			src, dst = src6, GroupV6
		}
		a, err := Parse(b, src, dst)
		if err != nil {
			var r Reason
			if !errors.As(err, &r) {
				t.Fatalf("error %v is not a drop reason", err)
			}
			return
		}
		if len(a.Addresses) == 0 || a.Interval == 0 || a.Interval > maxIntervalCs {
			t.Fatalf("accepted an impossible advertisement %+v", a)
		}
		again, err := Parse(a.Marshal(nil, src, dst), src, dst)
		if err != nil || again.VRID != a.VRID || again.Priority != a.Priority || !slices.Equal(again.Addresses, a.Addresses) {
			t.Fatalf("re-encoding %+v: %+v, %v", a, again, err)
		}
	})
}
