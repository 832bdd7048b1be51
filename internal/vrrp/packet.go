package vrrp

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// Protocol constants of RFC 5798.
const (
	Version       = 3
	TypeAdvert    = 1
	IPProtocol    = 112
	TTL           = 255 // sent, and required on receipt (RFC 5798 section 7.1)
	headerLen     = 8
	maxIntervalCs = 0x0fff // 12 bits of centiseconds: 40.95 s
)

// Multicast groups of RFC 5798 section 5.1.
var (
	GroupV4 = netip.MustParseAddr("224.0.0.18")
	GroupV6 = netip.MustParseAddr("ff02::12")
)

// Advertisement is a VRRPv3 advertisement.
type Advertisement struct {
	VRID      uint8
	Priority  uint8
	Interval  uint16 // Max Advertise Interval in centiseconds (12 bits)
	Addresses []netip.Addr
}

// IntervalDuration returns the advertised interval as a duration.
func (a *Advertisement) IntervalDuration() time.Duration {
	return time.Duration(a.Interval) * 10 * time.Millisecond
}

// Centiseconds converts an interval to the 12-bit wire value, clamped to 1-4095.
func Centiseconds(d time.Duration) uint16 {
	cs := d / (10 * time.Millisecond)
	return uint16(min(max(cs, 1), maxIntervalCs))
}

// Marshal appends the advertisement to b with its checksum computed over the
// pseudo-header of src and dst (RFC 5798 section 5.2.8; keepalived's default
// for IPv4 too). All addresses must be of src's family.
func (a *Advertisement) Marshal(b []byte, src, dst netip.Addr) []byte {
	start := len(b)
	b = append(b, Version<<4|TypeAdvert, a.VRID, a.Priority, uint8(len(a.Addresses)))
	b = binary.BigEndian.AppendUint16(b, a.Interval&maxIntervalCs)
	b = append(b, 0, 0) // checksum
	for _, ip := range a.Addresses {
		b = append(b, ip.AsSlice()...)
	}
	msg := b[start:]
	binary.BigEndian.PutUint16(msg[6:], ^fold(pseudoSum(src, dst, len(msg))+sum(msg)))
	return b
}

// Parse decodes and checks one advertisement received from src to dst
// (dst may be invalid when unknown: then only the pseudo-header-less IPv4
// checksum can match). It checks, in the order of RFC 5798 section 7.1 (the
// TTL is the transport's): version, type, length, checksum. It returns a
// Reason as the error.
func Parse(b []byte, src, dst netip.Addr) (Advertisement, error) {
	if len(b) < headerLen {
		return Advertisement{}, DropShort
	}
	if b[0]>>4 != Version {
		return Advertisement{}, DropVersion
	}
	if b[0]&0x0f != TypeAdvert {
		return Advertisement{}, DropType
	}
	alen := 4
	if src.Is6() {
		alen = 16
	}
	n := int(b[3])
	if n == 0 || len(b) < headerLen+n*alen {
		return Advertisement{}, DropLength
	}
	if !checksumOK(b, src, dst) {
		return Advertisement{}, DropChecksum
	}
	a := Advertisement{
		VRID:      b[1],
		Priority:  b[2],
		Interval:  binary.BigEndian.Uint16(b[4:]) & maxIntervalCs,
		Addresses: make([]netip.Addr, n),
	}
	if a.Interval == 0 {
		return Advertisement{}, DropInterval
	}
	for i := range n {
		off := headerLen + i*alen
		if alen == 4 {
			a.Addresses[i] = netip.AddrFrom4([4]byte(b[off : off+4]))
		} else {
			a.Addresses[i] = netip.AddrFrom16([16]byte(b[off : off+16]))
		}
	}
	return a, nil
}

// checksumOK accepts the checksum with the pseudo-header, or for IPv4 also
// without it (VRRPv2-style, as some VRRPv3 implementations send).
func checksumOK(b []byte, src, dst netip.Addr) bool {
	s := sum(b)
	if dst.IsValid() && fold(pseudoSum(src, dst, len(b))+s) == 0xffff {
		return true
	}
	return src.Is4() && fold(s) == 0xffff
}

// pseudoSum sums the IPv4 (RFC 768) or IPv6 (RFC 8200 section 8.1) pseudo-header.
func pseudoSum(src, dst netip.Addr, length int) uint32 {
	var s uint32
	s += sum(src.AsSlice()) + sum(dst.AsSlice())
	return s + IPProtocol + uint32(length)
}

func sum(b []byte) uint32 {
	var s uint32
	for len(b) >= 2 {
		s += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}
