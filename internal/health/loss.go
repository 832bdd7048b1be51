package health

import (
	"time"

	"github.com/prometheus/procfs"
)

// A hung check's premise is that what the apiserver waits for (etcd) does
// not run. Where packets are being lost, a stalled etcd request is as
// likely the loss: every TCP retransmission waits 200 ms or more, and at
// 5 % loss of every packet `/livez` went unanswered for 500 ms twice in a
// row about once in 10 minutes (docs/benchmarks.md) while etcd ran. So a
// check is judged hung only if this host's network namespace — where
// kubeadm's etcd, its peer traffic and the apiserver's etcd client live —
// lost no TCP segment in the last lossLookback: no data segment
// retransmitted, none arrived after a hole (kernel counters, netstat -s).
// Anything lost, the check waits on to HEALTH_TIMEOUT and counts as one
// failure, as before the hung check existed.

// lossLookback is how far back a lost segment makes a stall the network's.
// etcd's leader heartbeats each follower 10 times a second and is answered,
// so at the loss rates that stall it (5 % of packets) several segments are
// lost in any few seconds.
const lossLookback = 5 * time.Second

// lossCounter returns this network namespace's count of segments lost so
// far (any monotonic count will do); false when it cannot be read.
type lossCounter func() (uint64, bool)

// procLoss reads /proc/self/net/snmp and netstat: RetransSegs less
// TCPSynRetrans (data segments sent again: a SYN-ACK retransmitted is a
// listener's full accept queue, a frozen etcd's too) and TCPOFOQueue
// (segments that came after a hole: one of the peer's was lost). Not
// DelayedACKLost: zero-window and keepalive probes count there, and a
// frozen etcd's full receive buffer draws the first (measured: twice in
// 4 s after a SIGSTOP on a quiet lab).
func procLoss() lossCounter {
	self, err := procfs.Self()
	if err != nil {
		return func() (uint64, bool) { return 0, false }
	}
	return func() (uint64, bool) {
		snmp, err := self.Snmp()
		if err != nil || snmp.Tcp.RetransSegs == nil {
			return 0, false
		}
		ns, err := self.Netstat()
		if err != nil {
			return 0, false
		}
		n := *snmp.Tcp.RetransSegs
		if v := ns.TcpExt.TCPSynRetrans; v != nil {
			n -= *v
		}
		if v := ns.TcpExt.TCPOFOQueue; v != nil {
			n += *v
		}
		return uint64(max(n, 0)), true
	}
}

// lossReading is the loss count at a point in time.
type lossReading struct {
	at time.Time
	n  uint64
}

// lossHistory keeps the readings of the last lossLookback and one before.
type lossHistory struct {
	read     lossCounter
	readings []lossReading
}

// note takes a reading at now, dropping those it no longer needs: the
// newest at or before now - lossLookback is the baseline, older ones go.
func (h *lossHistory) note(now time.Time) {
	n, ok := h.read()
	if !ok {
		return
	}
	h.readings = append(h.readings, lossReading{at: now, n: n})
	cut := now.Add(-lossLookback)
	i := 0
	for i+1 < len(h.readings) && !h.readings[i+1].at.After(cut) {
		i++
	}
	h.readings = h.readings[i:]
}

// lossy says whether a segment was lost since the baseline (the reading
// lossLookback before now, or the oldest kept). Unreadable: false, the
// hung check works as without this.
func (h *lossHistory) lossy(now time.Time) bool {
	h.note(now)
	if len(h.readings) < 2 {
		return false
	}
	return h.readings[len(h.readings)-1].n > h.readings[0].n
}
