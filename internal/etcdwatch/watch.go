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
// next, and how far back a mark counts (the check after a hung one comes
// within a second); how recently a losing connection must have had an
// acknowledgement to count as lossy rather than cut (a partition is no
// loss: moving helps there); and how often a check begins with a mark
// (every 3 s keeps one within the window at any stall); and how long the connections a dump found are
// what a mark asks for, one by one (a hash lookup each, not a walk of the
// table) before it dumps again — or sooner: when one of those is gone,
// etcd redialled (loss makes it redial its peers) and the new connections
// are found at once; one opened beside them is marked from the next dump.
// Past lookupAtMost connections, a dump is the cheaper.
const (
	unreadGap       = 100 * time.Millisecond
	lossWindow      = 5 * time.Second
	ackedWithin     = time.Second
	markEvery       = 3 * time.Second
	rediscoverEvery = 30 * time.Second
	lookupAtMost    = 64
)

// Watch looks at the sockets of etcd on this host. Its zero value is not
// usable: New.
type Watch struct {
	ports  []uint16
	gap    time.Duration
	window time.Duration
	dump   func() ([]sock, error)
	lookup func([]sock) ([]sock, error) // the same sockets again, as they are now
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	mu         sync.Mutex
	marks      []mark    // loss counters at the last looks within the window, oldest first
	lossAt     time.Time // when a look last saw loss
	lossWhy    string
	known      []sock    // etcd's connections to other hosts at the last dump
	knownAt    time.Time // that dump's time; zero: none yet
	emptyDumps int       // dumps in a row that found none (redumpAfter)
}

// New watches etcd listening on ports (its client and peer ports, 2379 and
// 2380 on kubeadm and k3s).
func New(ports []uint16) *Watch {
	w := &Watch{
		ports: slices.Clone(ports), gap: unreadGap, window: lossWindow,
		now: time.Now, sleep: sleepCtx,
	}
	diag := newDiagSocket()
	w.dump = func() ([]sock, error) { return diag.dump(w.ports) }
	w.lookup = diag.lookup
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
	w.learn(w.now(), socks)
	if !slices.ContainsFunc(socks, func(s sock) bool { return s.state == stateListen && w.local(s) }) {
		return false, "no etcd listens on this host on ports " + w.portList()
	}
	losing, why := w.loss(socks)
	if !losing {
		return false, "etcd's connections lose no segments"
	}
	unread, seen, err := w.unread(ctx, socks)
	switch {
	case err != nil:
		return false, err.Error()
	case unread:
		return false, seen
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

func (w *Watch) portList() string {
	ps := make([]string, len(w.ports))
	for i, p := range w.ports {
		ps[i] = fmt.Sprint(p)
	}
	return strings.Join(ps, ",")
}
