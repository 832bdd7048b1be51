// Package l2 makes a held VIP known on the local link: it binds the address
// through the shared reconcile loop and announces it with gratuitous ARP
// (IPv4, a request and a reply as MetalLB sends them) or an unsolicited
// neighbor advertisement with the Override flag (IPv6, RFC 4861 section 7.2.6),
// at once and then GARP_REPEAT-1 more times 1.1 s apart (longer than Linux's
// ARP locktime of 1 s, so every neighbour takes the update). It also finds the
// interface to use when none is configured.
package l2
