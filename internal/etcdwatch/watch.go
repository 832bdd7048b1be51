package etcdwatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// How long unread bytes must stay unread to say etcd does not run (a
// running etcd reads within milliseconds, a CPU-throttled one within a
// CFS period, 100 ms); how long loss seen by one look still counts for the
// next (the check after a hung one comes within a second); and how
// recently a losing connection must have had an acknowledgement to count
// as lossy rather than cut (a partition is no loss: moving helps there).
const (
	unreadGap   = 100 * time.Millisecond
	lossWindow  = 5 * time.Second
	ackedWithin = time.Second
)

// Watch looks at the sockets of etcd on this host. Its zero value is not
// usable: New.
type Watch struct {
	ports  []uint16
	gap    time.Duration
	window time.Duration
	dump   func() ([]sock, error)
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	mu       sync.Mutex
	lookedAt time.Time      // the previous look
	counts   map[key]counts // its loss counters per connection
	lossAt   time.Time      // when a look last saw loss
	lossWhy  string
}

// counts are a connection's loss counters since it began.
type counts struct{ retrans, ooo uint32 }

// New watches etcd listening on ports (its client and peer ports, 2379 and
// 2380 on kubeadm and k3s).
func New(ports []uint16) *Watch {
	w := &Watch{
		ports: slices.Clone(ports), gap: unreadGap, window: lossWindow,
		now: time.Now, sleep: sleepCtx, counts: map[key]counts{},
	}
	w.dump = func() ([]sock, error) { return dumpPorts(w.ports) }
	return w
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Check reads the socket table once: an error says the stalls will not be
// told apart here (sock_diag refused: a security module, a sandbox).
func (w *Watch) Check() error {
	_, err := w.dump()
	return err
}

// NetworkStall says whether a stall of the apiserver's check is the
// network's: etcd listens here, reads what it is sent, and its connections
// lose segments. The reason says what was seen either way. An error
// reading the socket table answers no: the stall counts as etcd's.
func (w *Watch) NetworkStall(ctx context.Context) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	first, err := w.dump()
	if err != nil {
		return false, err.Error()
	}
	socks := w.etcds(first)
	if !slices.ContainsFunc(socks, func(s sock) bool { return s.state == stateListen && w.local(s) }) {
		return false, "no etcd listens on this host on ports " + w.portList()
	}
	losing, why := w.loss(socks)
	if !losing {
		return false, "etcd's connections lose no segments"
	}
	if unread, why, err := w.unread(ctx, socks); err != nil || unread {
		if err != nil {
			return false, err.Error()
		}
		return false, why
	}
	return true, "etcd on this host reads what it is sent and its connections lose segments (" + why + ")"
}

// etcds are the sockets with a local or remote port of etcd's.
func (w *Watch) etcds(all []sock) []sock {
	var out []sock
	for _, s := range all {
		if w.local(s) || slices.Contains(w.ports, s.remote.Port()) {
			out = append(out, s)
		}
	}
	return out
}

// local says whether s is etcd's end: its local port is one of etcd's.
func (w *Watch) local(s sock) bool { return slices.Contains(w.ports, s.local.Port()) }

// loss says whether etcd's connections off this host lose segments now,
// or lost some since the previous look if that was within the window, or
// a look within the window saw loss; it remembers this look's counters.
func (w *Watch) loss(socks []sock) (bool, string) {
	now := w.now()
	recent := !w.lookedAt.IsZero() && now.Sub(w.lookedAt) <= w.window
	seen := map[key]counts{}
	why := ""
	for _, s := range socks {
		if s.state != stateEstablished || !s.haveInfo || s.remote.Addr().IsLoopback() || s.remote.Addr() == s.local.Addr() {
			continue // on this host: nothing of it crosses the segment
		}
		c := counts{s.totalRetrans, s.ooo}
		seen[s.key()] = c
		if why != "" {
			continue
		}
		prev, had := w.counts[s.key()]
		switch {
		case s.lastAck > ackedWithin:
			// Nothing acknowledged for a second: cut off, not lossy.
		case s.timeouts > 0:
			why = fmt.Sprintf("%s: %d retransmission timeouts in a row", s.remote, s.timeouts)
		case s.retransOut > 0 || s.lostOut > 0:
			why = fmt.Sprintf("%s: %d segments retransmitted, %d lost, not acknowledged yet", s.remote, s.retransOut, s.lostOut)
		case recent && had && (c.retrans > prev.retrans || c.ooo > prev.ooo):
			why = fmt.Sprintf("%s: %d segments retransmitted and %d received out of order in the last %s",
				s.remote, grew(prev.retrans, c.retrans), grew(prev.ooo, c.ooo), now.Sub(w.lookedAt).Round(time.Millisecond))
		}
	}
	w.lookedAt, w.counts = now, seen
	if why != "" {
		w.lossAt, w.lossWhy = now, why
		return true, why
	}
	if !w.lossAt.IsZero() && now.Sub(w.lossAt) <= w.window {
		return true, fmt.Sprintf("%s ago, %s", now.Sub(w.lossAt).Round(time.Millisecond), w.lossWhy)
	}
	return false, ""
}

// unread says whether etcd left bytes unread on one of its connections
// for the gap: its process does not run (stopped, frozen).
func (w *Watch) unread(ctx context.Context, socks []sock) (bool, string, error) {
	waiting := map[key]sock{}
	for _, s := range socks {
		if s.state == stateEstablished && w.local(s) && s.rqueue > 0 && s.haveInfo {
			waiting[s.key()] = s
		}
	}
	if len(waiting) == 0 {
		return false, "", nil
	}
	if err := w.sleep(ctx, w.gap); err != nil {
		return false, "", err
	}
	again, err := w.dump()
	if err != nil {
		return false, "", err
	}
	later := map[key]sock{}
	for _, s := range again {
		if _, ok := waiting[s.key()]; ok && s.haveInfo {
			later[s.key()] = s
		}
	}
	for k, before := range waiting {
		s, ok := later[k]
		if !ok {
			// Closed during the gap, or missing from the table: not
			// known to be read, so not the network's (the safe side).
			return true, fmt.Sprintf("etcd's connection from %s, %d bytes unread, was gone %s later", k.remote, before.rqueue, w.gap), nil
		}
		// What etcd has read by now (received less still queued) falls
		// short of what it had received at the first look: in any state,
		// a connection closing with its input unread included.
		if read := s.received - uint64(s.rqueue); read < before.received {
			return true, fmt.Sprintf("etcd left %d bytes from %s unread for %s: its process does not run",
				before.received-read, s.remote, w.gap), nil
		}
	}
	return false, "", nil
}

// grew is how much a counter grew from a to b; 0 when it did not (a
// connection's 4-tuple reused).
func grew(a, b uint32) uint32 {
	if b < a {
		return 0
	}
	return b - a
}

func (w *Watch) portList() string {
	ps := make([]string, len(w.ports))
	for i, p := range w.ports {
		ps[i] = fmt.Sprint(p)
	}
	return strings.Join(ps, ",")
}
