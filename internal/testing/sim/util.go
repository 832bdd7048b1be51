package sim

import (
	"iter"
	"maps"
	"net"
	"net/netip"
	"slices"
)

// sortedNeigh yields a neighbour table in address order (a dump).
func sortedNeigh(t map[netip.Addr]net.HardwareAddr) iter.Seq2[netip.Addr, net.HardwareAddr] {
	return func(yield func(netip.Addr, net.HardwareAddr) bool) {
		for _, ip := range slices.SortedFunc(maps.Keys(t), func(a, b netip.Addr) int { return a.Compare(b) }) {
			if !yield(ip, t[ip]) {
				return
			}
		}
	}
}

// garbage is a frame that carries vip at the ARP sender address offset
// and does not parse (issue 32 finding 5's frame): an ARP header with a
// hardware address length of 0.
func garbage(vip netip.Addr) []byte {
	b := make([]byte, 60)
	copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 0x66})
	b[12], b[13] = 0x08, 0x06
	b[14], b[15], b[16], b[17] = 0, 1, 8, 0 // Ethernet, IPv4
	b[18], b[19] = 0, 4                     // hardware address length 0: does not parse
	if vip.Is4() {
		a := vip.As4()
		copy(b[28:32], a[:])
	}
	return b
}
