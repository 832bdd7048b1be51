// Package acd keeps a node from binding an address another host answers for:
// address conflict detection in the manner of RFC 5227 (ARP probes, sender
// address 0.0.0.0) for IPv4 and a neighbour solicitation for IPv6 (RFC 4861),
// answered by any host that has the address.
//
// A node that does not hold the VIP probes it every second, so that at a
// takeover the answer is already known and binding waits for nothing. A host
// that answers, or announces the VIP, and is neither this host nor a member
// of our own VRRP group (a master handing over holds the VIP for a moment)
// blocks the VIP: it is not bound, or released if it was, and probed every
// 250 ms; it is bound again once a probe goes unanswered.
package acd
