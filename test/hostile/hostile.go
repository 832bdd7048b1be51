// Package hostile generates malformed VRRP and BFD packets for the
// reliability tests: each category breaks one rule, so the daemon under
// attack must drop it for that reason, plus random bytes. Seeded: a run is
// repeatable.
package hostile

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"

	"github.com/novaedge/cpvip/internal/vrrp"
)

// Packet is one crafted payload and how it must be sent.
type Packet struct {
	Category string // the drop reason it must cause, or "random"
	Payload  []byte
	TTL      int
}

// VRRP returns n packets per category for a group with vrid and vip, sent
// from src to the multicast group.
func VRRP(rng *rand.Rand, n int, vrid uint8, vip, src netip.Addr) []Packet {
	good := func(prio uint8, id uint8) []byte {
		a := vrrp.Advertisement{VRID: id, Priority: prio, Interval: 100, Addresses: []netip.Addr{vip}}
		return a.Marshal(nil, src, vrrp.GroupV4)
	}
	var out []Packet
	for range n {
		b := good(uint8(1+rng.IntN(254)), vrid)
		out = append(out,
			Packet{"short", b[:rng.IntN(8)], 255},
			Packet{"version", withByte(b, 0, 0x21), 255},
			Packet{"type", withByte(b, 0, 0x32), 255},
			Packet{"length", withByte(b, 3, byte(2+rng.IntN(200))), 255},
			Packet{"checksum", withByte(b, 2, b[2]^0xff), 255},
			Packet{"checksum", append(append([]byte(nil), b...), random(rng, 1000+rng.IntN(300))...), 255}, // oversized
			Packet{"ttl", b, 1 + rng.IntN(254)},
			Packet{"other_vrid", good(200, vrid+1+uint8(rng.IntN(100))), 255},
			Packet{"random", random(rng, rng.IntN(1400)), 255},
		)
	}
	return out
}

// BFD returns n packets per category aimed at a BFD endpoint.
func BFD(rng *rand.Rand, n int) []Packet {
	base := func() []byte {
		b := make([]byte, 24)
		b[0], b[1], b[2], b[3] = 1<<5, 3<<6, 3, 24 // version 1, Up, mult 3, length 24
		binary.BigEndian.PutUint32(b[4:], 1+rng.Uint32N(1<<31))
		binary.BigEndian.PutUint32(b[12:], 50000)
		binary.BigEndian.PutUint32(b[16:], 50000)
		return b
	}
	var out []Packet
	for range n {
		unknown := base()
		binary.BigEndian.PutUint32(unknown[8:], 1+rng.Uint32N(1<<31))
		down := base()
		down[1] = 1 << 6 // Down, your discriminator 0: looked up by source, which is no peer
		out = append(out,
			Packet{"short", base()[:rng.IntN(24)], 255},
			Packet{"version", withByte(base(), 0, 0), 255},
			Packet{"length", withByte(base(), 3, 60), 255},
			Packet{"detect_mult", withByte(base(), 2, 0), 255},
			Packet{"multipoint", withByte(base(), 1, 3<<6|0x01), 255},
			Packet{"my_discriminator", zeroMyDisc(base()), 255},
			Packet{"your_discriminator", unknown, 255},
			Packet{"state", base(), 255},
			Packet{"no_session", down, 255},
			Packet{"ttl", unknown, 1 + rng.IntN(254)},
			Packet{"random", random(rng, rng.IntN(200)), 255},
		)
	}
	return out
}

func withByte(b []byte, i int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[i] = v
	return c
}

func zeroMyDisc(b []byte) []byte {
	binary.BigEndian.PutUint32(b[4:], 0)
	return b
}

func random(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
