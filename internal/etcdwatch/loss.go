package etcdwatch

import (
	"fmt"
	"time"
)

// mark is what a look saw of etcd's connections to other hosts: their
// loss counters (since each began).
type mark struct {
	at     time.Time
	counts map[key]counts
}

type counts struct{ retrans, ooo uint32 }

// Mark records the loss counters of etcd's connections, at most once in
// markEvery: the checker calls it as each check begins, so the look at a
// stall compares with what the counters were before the stall began (loss
// of the segment that caused it shows only then: by the look, its
// retransmission has come and gone). The connections a dump found within
// rediscoverEvery are asked for one by one; else a dump finds them. By
// raw system calls on the checker's own wake-up; an error leaves no mark.
func (w *Watch) Mark() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if n := len(w.marks); n > 0 && now.Sub(w.marks[n-1].at) < markEvery {
		return
	}
	if socks, err := w.markLook(now); err == nil {
		w.remember(now, socks)
	}
}

// markLook returns etcd's connections for a mark: those the last dump
// found, asked for again (a dump walks the kernel's whole TCP hash table,
// 0.5-1.5 ms on a busy host; the lookups take microseconds each); a new
// dump's once that is w.redumpAfter() old, one of them is gone (etcd
// redialled: its new connections need a mark before the next stall), or
// the lookups failed.
func (w *Watch) markLook(now time.Time) ([]sock, error) {
	if !w.knownAt.IsZero() && now.Sub(w.knownAt) < w.redumpAfter() && len(w.known) <= lookupAtMost {
		got, err := w.lookup(w.known)
		if err == nil && countOffHost(got) == len(w.known) {
			return got, nil
		}
	}
	all, err := w.dump()
	if err != nil {
		return nil, err
	}
	socks := w.etcds(all)
	w.learn(now, socks)
	return socks, nil
}

// redumpAfter is how long the last dump's connections serve the marks:
// rediscoverEvery; while it found none to another host, markEvery doubled
// at each such dump up to that (etcd starting, restarting or not yet
// joined by its peers: its connections must have marks soon after they
// open; a host without etcd settles at a dump every rediscoverEvery).
func (w *Watch) redumpAfter() time.Duration {
	if len(w.known) > 0 {
		return rediscoverEvery
	}
	return min(rediscoverEvery, markEvery<<min(w.emptyDumps-1, 4))
}

// learn keeps etcd's connections to other hosts among socks, a dump's, as
// what the marks ask for until redumpAfter.
func (w *Watch) learn(now time.Time, socks []sock) {
	w.emptyDumps++
	w.known, w.knownAt = w.known[:0], now
	for _, s := range socks {
		if offHost(s) {
			w.known = append(w.known, s)
		}
	}
	if len(w.known) > 0 {
		w.emptyDumps = 0
	}
}

// remember adds a mark of socks at now and forgets those past the window.
func (w *Watch) remember(now time.Time, socks []sock) {
	m := mark{at: now, counts: map[key]counts{}}
	for _, s := range socks {
		if offHost(s) {
			m.counts[s.key()] = counts{s.totalRetrans, s.ooo}
		}
	}
	w.marks = append(w.marks, m)
	for len(w.marks) > 0 && now.Sub(w.marks[0].at) > w.window {
		w.marks = w.marks[1:]
	}
}

// countOffHost counts socks that are offHost (a lookup finds a connection
// closed since in TIME_WAIT, without tcp_info: gone as far as a mark goes).
func countOffHost(socks []sock) int {
	n := 0
	for _, s := range socks {
		if offHost(s) {
			n++
		}
	}
	return n
}

// offHost says whether s is an established connection to another host,
// whose segments cross the network, with tcp_info.
func offHost(s sock) bool {
	return s.state == stateEstablished && s.haveInfo && !s.remote.Addr().IsLoopback() && s.remote.Addr() != s.local.Addr()
}

// loss says whether etcd's connections to other hosts lose segments: one
// acknowledged within a second (a connection with none for longer is cut,
// not lossy) has a retransmission timeout or an unacknowledged
// retransmission now, or retransmitted or received out of order since the
// oldest mark within the window; or a look within the window saw loss.
// This look is a mark too.
func (w *Watch) loss(socks []sock) (bool, string) {
	now := w.now()
	why := ""
	for _, s := range socks {
		if !offHost(s) || s.lastAck > ackedWithin || why != "" {
			continue
		}
		switch {
		case s.timeouts > 0:
			why = fmt.Sprintf("%s: %d retransmission timeouts in a row", s.remote, s.timeouts)
		case s.retransOut > 0 || s.lostOut > 0:
			why = fmt.Sprintf("%s: %d segments retransmitted, %d lost, not acknowledged yet", s.remote, s.retransOut, s.lostOut)
		default:
			why = w.grewSince(now, s)
		}
	}
	w.remember(now, socks)
	if why != "" {
		w.lossAt, w.lossWhy = now, why
		return true, why
	}
	if !w.lossAt.IsZero() && now.Sub(w.lossAt) <= w.window {
		return true, fmt.Sprintf("%s ago, %s", now.Sub(w.lossAt).Round(time.Millisecond), w.lossWhy)
	}
	return false, ""
}

// grewSince says how s's counters grew since the oldest mark within the
// window that has it; empty when they did not.
func (w *Watch) grewSince(now time.Time, s sock) string {
	for _, m := range w.marks {
		prev, ok := m.counts[s.key()]
		if !ok || now.Sub(m.at) > w.window {
			continue
		}
		if s.totalRetrans > prev.retrans || s.ooo > prev.ooo {
			return fmt.Sprintf("%s: %d segments retransmitted and %d received out of order in the last %s",
				s.remote, grew(prev.retrans, s.totalRetrans), grew(prev.ooo, s.ooo), now.Sub(m.at).Round(time.Millisecond))
		}
		return ""
	}
	return ""
}

// grew is how much a counter grew from a to b; 0 when it did not (a
// connection's 4-tuple reused).
func grew(a, b uint32) uint32 {
	if b < a {
		return 0
	}
	return b - a
}
