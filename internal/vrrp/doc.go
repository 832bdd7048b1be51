// Package vrrp implements VRRP version 3 (RFC 5798, updated by RFC 9568) for
// IPv4 and IPv6 as an election: the advertisement codec, the protocol state
// machine of RFC 5798 section 6.4 driven by explicit time (no clock inside),
// and a raw-socket transport (IP protocol 112, TTL/hop limit 255, multicast
// 224.0.0.18 / ff02::12 or unicast peers). It uses the interface's real MAC:
// no virtual MAC, so the announcer's gratuitous ARP moves the VIP.
//
// Interoperates with keepalived 2.2 in vrrp_version 3: IPv4 checksums are
// sent with the pseudo-header and accepted with or without it, and every
// advertisement carries exactly the instance's VIP (keepalived drops an
// advertisement whose address list differs from its own).
package vrrp
