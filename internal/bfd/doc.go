// Package bfd implements Bidirectional Forwarding Detection (RFC 5880) in
// asynchronous mode for single-hop IPv4 and IPv6 (RFC 5881): the control
// packet codec with simple-password, keyed SHA1 and meticulous keyed SHA1
// authentication, the session state machine on explicit time (no clock
// inside: events carry now, and NextTx/DetectDeadline say when to call
// back), and a UDP transport (destination port 3784, one source port per
// session from 49152-65535, TTL 255 sent and required). It knows nothing of
// BGP: it reports each session's state.
//
// The receive and send paths do not allocate, and a packet is handled on
// the goroutine that reads it: one reader per address family and one timer
// for all sessions (loop.go), raw system calls for the packets
// (internal/quietio).
package bfd
