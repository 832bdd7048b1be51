package etcdwatch

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	etcdClient = netip.MustParseAddrPort("192.0.2.11:2379")
	etcdPeer   = netip.MustParseAddrPort("192.0.2.11:2380")
	peer       = netip.MustParseAddrPort("192.0.2.12:40000")
	apiserver  = netip.MustParseAddrPort("127.0.0.1:50000")
	loopEtcd   = netip.MustParseAddrPort("127.0.0.1:2379")
)

// table is a socket table the test changes between looks.
type table struct {
	socks     []sock
	dumps     int
	lookups   int          // sockets asked for one by one
	lookupErr error        // what a lookup fails with
	after     func(*table) // runs after each dump: what changes during the gap
}

// lookup returns those of socks still in the table, as they are now.
func (tb *table) lookup(socks []sock) ([]sock, error) {
	if tb.lookupErr != nil {
		return nil, tb.lookupErr
	}
	var out []sock
	for _, s := range socks {
		tb.lookups++
		for _, now := range tb.socks {
			if now.key() == s.key() {
				out = append(out, now)
			}
		}
	}
	return out, nil
}

func (tb *table) dump() ([]sock, error) {
	tb.dumps++
	out := append([]sock(nil), tb.socks...)
	if tb.after != nil {
		tb.after(tb)
	}
	return out, nil
}

func listener(ap netip.AddrPort) sock {
	return sock{local: netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port()), state: stateListen}
}

func conn(local, remote netip.AddrPort) sock {
	return sock{local: local, remote: remote, state: stateEstablished, haveInfo: true}
}

func newTestWatch(tb *table, now *time.Time) *Watch {
	w := New([]uint16{2379, 2380})
	w.dump, w.lookup = tb.dump, tb.lookup
	w.now = func() time.Time { return *now }
	w.sleep = func(context.Context, time.Duration) error { *now = now.Add(w.gap); return nil }
	return w
}

func TestNetworkStall(t *testing.T) {
	lossy := conn(etcdPeer, peer)
	lossy.timeouts = 1
	unread := conn(loopEtcd, apiserver)
	unread.rqueue, unread.received = 120, 5000
	read := unread // drained during the gap: it received 40 more and read everything
	read.rqueue, read.received = 0, 5040
	stillUnread := unread // 40 more came, none of it read
	stillUnread.rqueue, stillUnread.received = 160, 5040

	for _, tt := range []struct {
		name   string
		socks  []sock
		during func(*table)
		want   bool
		reason string
	}{
		{"no etcd here", []sock{conn(apiserver, loopEtcd)}, nil, false, "no etcd listens on this host on ports 2379,2380"},
		{"etcd, no loss", []sock{listener(etcdClient), listener(etcdPeer), conn(etcdPeer, peer), conn(loopEtcd, apiserver)}, nil, false, "lose no segments"},
		{"loss on loopback only", []sock{listener(etcdClient), func() sock { s := conn(loopEtcd, apiserver); s.timeouts = 2; return s }()}, nil, false, "lose no segments"},
		{"loss, etcd reads", []sock{listener(etcdClient), lossy, conn(loopEtcd, apiserver)}, nil, true, "192.0.2.12:40000: 1 retransmission timeouts in a row"},
		{"loss, etcd drains during the gap", []sock{listener(etcdClient), lossy, unread},
			func(tb *table) { tb.socks = []sock{listener(etcdClient), lossy, read} }, true, "lose segments"},
		{"loss, etcd leaves its input unread: stopped", []sock{listener(etcdClient), lossy, unread},
			func(tb *table) { tb.socks = []sock{listener(etcdClient), lossy, stillUnread} }, false, "etcd left 120 bytes from 127.0.0.1:50000 unread for 100ms"},
		{"loss, the unread connection gone during the gap: not known to be read", []sock{listener(etcdClient), lossy, unread},
			func(tb *table) { tb.socks = []sock{listener(etcdClient), lossy} }, false, "etcd's connection from 127.0.0.1:50000, 120 bytes unread, was gone 100ms later"},
		{"loss, the unread connection closing, its input still unread", []sock{listener(etcdClient), lossy, unread},
			func(tb *table) {
				closing := stillUnread
				closing.state = 8 // CLOSE_WAIT
				tb.socks = []sock{listener(etcdClient), lossy, closing}
			}, false, "unread for 100ms"},
		{"loss over the node's own address: on this host", []sock{listener(etcdClient), func() sock {
			s := conn(etcdClient, netip.AddrPortFrom(etcdClient.Addr(), 50001))
			s.timeouts = 1
			return s
		}()}, nil, false, "lose no segments"},
		{"nothing acknowledged for 3 s: cut off, not lossy", []sock{listener(etcdClient), func() sock {
			s := lossy
			s.lastAck = 3 * time.Second
			return s
		}()}, nil, false, "lose no segments"},
		{"loss on etcd's outgoing peer connection", []sock{listener(etcdPeer), func() sock {
			s := conn(netip.MustParseAddrPort("192.0.2.11:51000"), netip.MustParseAddrPort("192.0.2.13:2380"))
			s.retransOut = 2
			return s
		}()}, nil, true, "2 segments retransmitted, 0 lost"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			tb := &table{socks: tt.socks, after: tt.during}
			got, reason := newTestWatch(tb, &now).NetworkStall(context.Background())
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("NetworkStall = %v %q, want %v and a reason with %q", got, reason, tt.want, tt.reason)
			}
			// The socket table is read once, twice only to see whether
			// queued input was read.
			if want := map[bool]int{false: 1, true: 2}[tt.during != nil]; tb.dumps != want {
				t.Errorf("%d dumps, want %d", tb.dumps, want)
			}
		})
	}
}

// TestLossSinceMarks: the first stall's look sees loss since the mark
// taken as its check began (the lost segment's retransmission came and
// went before the look); counters that grew since a mark within the
// window are loss, since one older say nothing; marks come at most once
// in markEvery.
func TestLossSinceMarks(t *testing.T) {
	now := time.Unix(1000, 0)
	c := conn(etcdPeer, peer)
	c.totalRetrans, c.ooo = 7, 3
	tb := &table{socks: []sock{listener(etcdClient), c}}
	w := newTestWatch(tb, &now)
	w.Mark() // a check begins
	now = now.Add(300 * time.Millisecond)
	w.Mark() // the next check: too soon for another mark
	if tb.dumps != 1 {
		t.Fatalf("%d dumps for two marks 300ms apart, want 1", tb.dumps)
	}
	now = now.Add(400 * time.Millisecond)
	c.ooo = 4 // one segment came out of order: one before it was lost
	tb.socks = []sock{listener(etcdClient), c}
	if got, why := w.NetworkStall(context.Background()); !got || !strings.Contains(why, "0 segments retransmitted and 1 received out of order in the last 700ms") {
		t.Fatalf("a segment out of order since the check began: %v %q", got, why)
	}
	now = now.Add(4 * time.Second)
	if got, why := w.NetworkStall(context.Background()); !got || !strings.Contains(why, "in the last 4.7s") {
		t.Fatalf("4.7 s after the mark: %v %q, want the growth since it", got, why)
	}
	now = now.Add(6 * time.Second)
	c.totalRetrans = 9
	tb.socks = []sock{listener(etcdClient), c}
	if got, why := w.NetworkStall(context.Background()); got {
		t.Fatalf("counters grew since looks 6 s and more ago, beyond the window: %v %q", got, why)
	}
}

// TestMarksLookUpWhatADumpFound: a mark asks for the connections to other
// hosts the last dump found, one by one, until that dump is
// rediscoverEvery old; then a dump finds them again (a connection opened
// meanwhile, marked from then on).
func TestMarksLookUpWhatADumpFound(t *testing.T) {
	now := time.Unix(1000, 0)
	c := conn(etcdPeer, peer)
	c.totalRetrans = 7
	tb := &table{socks: []sock{listener(etcdClient), c, conn(loopEtcd, apiserver)}}
	w := newTestWatch(tb, &now)
	w.Mark() // the first: a dump
	now = now.Add(markEvery)
	c.totalRetrans = 8
	tb.socks[1] = c
	w.Mark() // a lookup of the one connection to another host
	if tb.dumps != 1 || tb.lookups != 1 {
		t.Fatalf("%d dumps, %d lookups; want 1 and 1 (the loopback connection is not marked)", tb.dumps, tb.lookups)
	}
	if got := w.marks[1].counts[c.key()].retrans; got != 8 {
		t.Fatalf("the lookup's mark has %d retransmissions, want 8 (as the connection is now)", got)
	}
	other := conn(netip.MustParseAddrPort("192.0.2.11:41000"), netip.MustParseAddrPort("192.0.2.13:2380"))
	tb.socks = append(tb.socks, other)
	now = now.Add(rediscoverEvery)
	w.Mark()
	if tb.dumps != 2 {
		t.Fatalf("%d dumps %v after the first, want 2", tb.dumps, rediscoverEvery+markEvery)
	}
	if _, ok := w.marks[len(w.marks)-1].counts[other.key()]; !ok {
		t.Fatal("the connection opened meanwhile is not in the new dump's mark")
	}
	// A stall's dump is a dump too: the next mark looks up what it found.
	now = now.Add(markEvery)
	w.NetworkStall(context.Background())
	now = now.Add(markEvery)
	w.Mark()
	if tb.dumps != 3 || tb.lookups != 3 {
		t.Fatalf("%d dumps, %d lookups; want 3 and 3 (the mark after the stall's dump looked up two)", tb.dumps, tb.lookups)
	}
}

// TestMarkDumpsWhenAConnectionIsGone: etcd redialled (a known connection
// closed, a new one open): the mark dumps at once and marks the new one; a
// lookup that fails leaves no mark and asks again at the next check.
func TestMarkDumpsWhenAConnectionIsGone(t *testing.T) {
	now := time.Unix(1000, 0)
	old := conn(etcdPeer, peer)
	tb := &table{socks: []sock{listener(etcdClient), old}}
	w := newTestWatch(tb, &now)
	w.Mark()
	redialled := conn(etcdPeer, netip.MustParseAddrPort("192.0.2.12:40001"))
	tb.socks = []sock{listener(etcdClient), redialled}
	now = now.Add(markEvery)
	w.Mark()
	if tb.dumps != 2 || tb.lookups != 1 {
		t.Fatalf("%d dumps, %d lookups; want 2 and 1: the lookup found the old connection gone", tb.dumps, tb.lookups)
	}
	if _, ok := w.marks[1].counts[redialled.key()]; !ok {
		t.Fatal("the redialled connection has no mark")
	}
	tb.lookupErr = errors.New("sock_diag: no buffer space")
	now = now.Add(markEvery)
	w.Mark()
	if last := w.marks[len(w.marks)-1].at; tb.dumps != 3 || !last.Equal(now) {
		t.Fatalf("a failed lookup: %d dumps, the latest mark at %v; want a dump and a mark now (%v)", tb.dumps, last, now)
	}
}

// TestMarksRedumpWhileNothingIsKnown: while the last dump found no
// connection to another host (etcd starting, restarting, alone), marks
// dump again after 3, 6, 12, 24 s, then every 30 s; once one is found,
// they look it up.
func TestMarksRedumpWhileNothingIsKnown(t *testing.T) {
	now := time.Unix(1000, 0)
	tb := &table{socks: []sock{listener(etcdClient)}}
	w := newTestWatch(tb, &now)
	var at []time.Duration // when each dump came, after the first
	start := now
	for range 100 { // a check a second for 100 s
		before := tb.dumps
		w.Mark()
		if tb.dumps > before && now != start {
			at = append(at, now.Sub(start))
		}
		now = now.Add(time.Second)
	}
	want := []time.Duration{3 * time.Second, 9 * time.Second, 21 * time.Second, 45 * time.Second, 75 * time.Second}
	if !slices.Equal(at, want) {
		t.Fatalf("dumps at %v after the first, want %v", at, want)
	}
	tb.socks = append(tb.socks, conn(etcdPeer, peer)) // its peer connects
	for range 31 {
		w.Mark()
		now = now.Add(time.Second)
	}
	lookups := tb.lookups
	now = now.Add(markEvery)
	w.Mark()
	if tb.lookups != lookups+1 {
		t.Fatalf("once a connection is known, a mark looks it up: %d lookups, want %d", tb.lookups, lookups+1)
	}
}

// TestNoMarkNoGrowth: without a mark, counters say nothing at the first
// look (they count since the connection began).
func TestNoMarkNoGrowth(t *testing.T) {
	now := time.Unix(1000, 0)
	c := conn(etcdPeer, peer)
	c.totalRetrans, c.ooo = 700, 300
	w := newTestWatch(&table{socks: []sock{listener(etcdClient), c}}, &now)
	if got, why := w.NetworkStall(context.Background()); got {
		t.Fatalf("lifetime counters, no mark: %v %q", got, why)
	}
}

// TestRealSockets reads this process's own sockets: a listener on a
// loopback port, and a connection to it whose server end reads nothing.
func TestRealSockets(t *testing.T) {
	port, cl, srv := loopbackConn(t, "tcp4", "127.0.0.1:0")
	if _, err := cl.Write(make([]byte, 300)); err != nil {
		t.Fatal(err)
	}
	w := New([]uint16{port})
	var socks []sock
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		all, err := newDiagSocket().dump([]uint16{port})
		if err != nil {
			t.Skipf("no sock_diag here: %v", err)
		}
		socks = w.etcds(all)
		if i := indexQueued(w, socks); i >= 0 || time.Now().After(deadline) {
			break
		}
	}
	if i := indexQueued(w, socks); i < 0 {
		t.Fatalf("no connection on port %d with 300 bytes queued: %+v", port, socks)
	}
	unread, why, err := w.unread(context.Background(), socks)
	if err != nil || !unread {
		t.Fatalf("a server end that reads nothing: unread %v %q %v", unread, why, err)
	}
	// The same input, read during the gap: etcd runs.
	all, err := newDiagSocket().dump([]uint16{port})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.ReadFull(srv, make([]byte, 300)) }()
	if unread, why, err := w.unread(context.Background(), w.etcds(all)); err != nil || unread {
		t.Fatalf("a server end that reads during the gap: unread %v %q %v", unread, why, err)
	}
}

func indexQueued(w *Watch, socks []sock) int {
	for i, s := range socks {
		if s.state == stateEstablished && w.local(s) && s.rqueue == 300 {
			return i
		}
	}
	return -1
}
