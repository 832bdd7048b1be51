package spread

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// memStore holds copies of descriptors by name, as systemd's store does:
// what it holds outlives the copies a "process" closes.
type memStore struct {
	mu  sync.Mutex
	fds map[string][]int
}

func newMemStore() *memStore { return &memStore{fds: map[string][]int{}} }

func (m *memStore) Keep(name string, _ bool, fds ...int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fd := range fds {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return err
		}
		m.fds[name] = append(m.fds[name], d)
	}
	return nil
}

func (m *memStore) Forget(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fd := range m.fds[name] {
		unix.Close(fd)
	}
	delete(m.fds, name)
	return nil
}

func (m *memStore) names() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fds)
}

// inherit is what the next run gets: a copy of each, by name.
func (m *memStore) inherit(t *testing.T) map[string][]*os.File {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]*os.File{}
	for name, fds := range m.fds {
		for _, fd := range fds {
			d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], os.NewFile(uintptr(d), name))
		}
	}
	return out
}

func (m *memStore) close() {
	for name := range m.fds {
		m.Forget(name)
	}
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A carried connection is kept under four names while it lives (its two
// sockets, its two pipes) and forgotten when it ends.
func TestCarriedConnectionIsKeptWhileItLives(t *testing.T) {
	st := newMemStore()
	defer st.close()
	addr, _ := runProxy(t, &Proxy{Pool: upPool(backend(t, "a")), Log: slog.New(slog.DiscardHandler), Keep: st})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a\n", "ping\n"} {
		if l, err := r.ReadString('\n'); err != nil || l != want {
			t.Fatalf("read %q %v, want %q", l, err, want)
		}
	}
	eventually(t, "four names kept", func() bool { return st.names() == 4 })
	c.Close()
	eventually(t, "every name forgotten", func() bool { return st.names() == 0 })
}

// A connection a run kept, with bytes in its pipes that it read and never
// wrote (killed between the two halves of a splice), is adopted by the
// next run: those bytes arrive first, in order, then the connection
// carries on both ways; its end forgets it.
func TestAdoptedConnectionLosesNoByte(t *testing.T) {
	st := newMemStore()
	defer st.close()
	be := backend(t, "b")
	// The previous run: a client accepted, the backend dialled and greeted.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.Dial("tcp", be.String())
	if err != nil {
		t.Fatal(err)
	}
	if l, err := bufio.NewReader(b).ReadString('\n'); err != nil || l != "b\n" { // one read: nothing else is sent yet
		t.Fatalf("greeting %q %v", l, err)
	}
	s, err := newSpliced(accepted.(*net.TCPConn), b.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(s.up.w, []byte("held up\n"))     // read from the client, not yet sent on
	unix.Write(s.down.w, []byte("held down\n")) // read from the backend, not yet sent on
	if _, err := newKeeper(st).keep(s); err != nil {
		t.Fatal(err)
	}
	s.detached.Store(true) // the process dies: nothing is shut down,
	s.close()              // the store's copies remain (the pipes' read ends alone)

	inherited := st.inherit(t)
	inherited["foreign"] = nil
	as, errs := AdoptFiles(inherited, st)
	if len(as) != 1 || len(errs) != 0 || len(inherited) != 1 {
		t.Fatalf("adopted %d, errors %v, left %d names, want 1, none, the foreign one", len(as), errs, len(inherited))
	}
	if as[0].Backend != be {
		t.Errorf("backend %v, want %v", as[0].Backend, be)
	}
	pool := upPool(be)
	p := &Proxy{Pool: pool, Log: slog.New(slog.DiscardHandler), Keep: st}
	p.Adopt(as)
	defer func() { p.closeAll(false); p.wg.Wait() }()
	r := bufio.NewReader(client)
	client.Write([]byte("after\n"))
	for _, want := range []string{"held down\n", "held up\n", "after\n"} {
		if l, err := r.ReadString('\n'); err != nil || l != want {
			t.Fatalf("read %q %v, want %q", l, err, want)
		}
	}
	if got := pool.Status()[0]; got.Active != 1 || got.Adopted != 1 {
		t.Errorf("backend status %+v, want 1 active, 1 adopted", got)
	}
	client.Close()
	eventually(t, "the adopted connection forgotten", func() bool { return st.names() == 0 })
	eventually(t, "the adopted connection closed", func() bool { return pool.Status()[0].Active == 0 })
}

// A connection whose parts are not all there, or whose backend is no longer
// listed, is closed and forgotten.
func TestAdoptionDropsWhatItCannotCarry(t *testing.T) {
	st := newMemStore()
	defer st.close()
	p, err := newKpipe()
	if err != nil {
		t.Fatal(err)
	}
	st.Keep(keptName("x-1", roleUp), false, p.r)
	p.close()
	as, errs := AdoptFiles(st.inherit(t), st)
	if len(as) != 0 || len(errs) != 1 || st.names() != 0 {
		t.Fatalf("adopted %d, errors %v, %d names left; want none adopted, one error, none left", len(as), errs, st.names())
	}

	client, accepted := tcpPair(t)
	other, err := net.Dial("tcp", backend(t, "o").String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSpliced(accepted, other.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	newKeeper(st).keep(s)
	s.detached.Store(true)
	s.close()
	as, errs = AdoptFiles(st.inherit(t), st)
	if len(as) != 1 || len(errs) != 0 {
		t.Fatalf("adopted %d, errors %v", len(as), errs)
	}
	(&Proxy{Pool: upPool(backend(t, "b")), Log: slog.New(slog.DiscardHandler), Keep: st}).Adopt(as)
	if st.names() != 0 {
		t.Errorf("%d names left for a connection to a backend not listed", st.names())
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(client); err != nil {
		t.Errorf("the client of a connection to a backend not listed: %v, want its end", err)
	}
}

// tcpPair is two connected loopback TCP sockets.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// FuzzParseKept: a name of the store is ours only as keptName writes it.
func FuzzParseKept(f *testing.F) {
	f.Add("s0a1b2c-7.c")
	f.Add("s.c")
	f.Add("sa.b.u")
	f.Add("sa-b-c.d")
	f.Add("other")
	f.Fuzz(func(t *testing.T, name string) {
		id, role, ok := parseKept(name)
		if ok && keptName(id, role) != name {
			t.Errorf("parseKept(%q) = %q %q, which keptName writes %q", name, id, role, keptName(id, role))
		}
	})
}

// The unit's drop-in lets systemd keep MaxKept connections, four
// descriptors each, sent on the notification socket (an AF_UNIX socket,
// which the unit allows), and the next run receive them.
func TestDropInStoresEveryCarriedConnection(t *testing.T) {
	unit, err := os.ReadFile("../../systemd/novaedge-cpvip.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nRestrictAddressFamilies=AF_INET AF_INET6 AF_NETLINK AF_PACKET AF_UNIX\n") {
		t.Error("the unit does not allow AF_UNIX sockets: nothing reaches systemd's store")
	}
	b, err := os.ReadFile("../../packaging/spread.conf")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"FileDescriptorStoreMax": fmt.Sprint(len(roles) * MaxKept),
		"NotifyAccess":           "main",
		"LimitNOFILE":            "16384:524288", // the soft limit holds what systemd passes, and more
	}
	if 16384 < len(roles)*MaxKept+1000 {
		t.Errorf("LimitNOFILE's soft limit does not hold %d kept descriptors and the daemon's own", len(roles)*MaxKept)
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if w, known := want[k]; ok && known {
			if v != w {
				t.Errorf("spread.conf: %s=%s, want %s", k, v, w)
			}
			delete(want, k)
		}
	}
	for k, v := range want {
		t.Errorf("spread.conf lacks %s=%s", k, v)
	}
}

// A restart: the running proxy is detached at its end, its carried
// connection left open in the store with whatever it had not copied, and
// the next run adopts it; the client sees one connection throughout.
// Without a Keeper the end closes it as always.
func TestDetachedConnectionIsAdoptedByTheNextRun(t *testing.T) {
	st := newMemStore()
	defer st.close()
	be := backend(t, "a")
	first := &Proxy{Pool: upPool(be), Log: slog.New(slog.DiscardHandler), Keep: st}
	addr, stop := runProxy(t, first)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	c.Write([]byte("one\n"))
	for _, want := range []string{"a\n", "one\n"} {
		if l, err := r.ReadString('\n'); err != nil || l != want {
			t.Fatalf("read %q %v, want %q", l, err, want)
		}
	}
	eventually(t, "four names kept", func() bool { return st.names() == 4 })
	first.Detach()
	if !stop() {
		t.Fatal("Serve did not return after its context ended")
	}
	if st.names() != 4 {
		t.Fatalf("%d names kept after the detached end, want 4", st.names())
	}
	c.Write([]byte("between\n")) // nobody copies: it waits in the kernel

	as, errs := AdoptFiles(st.inherit(t), st)
	if len(as) != 1 || len(errs) != 0 {
		t.Fatalf("adopted %d, errors %v", len(as), errs)
	}
	next := &Proxy{Pool: upPool(be), Log: slog.New(slog.DiscardHandler), Keep: st}
	_, stopNext := runProxy(t, next)
	next.Adopt(as)
	c.Write([]byte("after\n"))
	for _, want := range []string{"between\n", "after\n"} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if l, err := r.ReadString('\n'); err != nil || l != want {
			t.Fatalf("read %q %v, want %q", l, err, want)
		}
	}
	// A stop, not detached: the connection ends and is forgotten.
	if !stopNext() {
		t.Fatal("Serve did not return after its context ended")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("after a stop the client read %v, want EOF", err)
	}
	if st.names() != 0 {
		t.Errorf("%d names left after a stop", st.names())
	}
}

// The names of MaxKept kept connections fit the one environment variable
// systemd passes them in (LISTEN_FDNAMES; exec takes 128 KiB a string),
// with a run id of the longest and sequence numbers past two trillion.
func TestKeptNamesFitOneVariable(t *testing.T) {
	run, seq := strconv.FormatUint(1<<32-1, 36), strconv.FormatUint(1<<41, 36)
	n := len("LISTEN_FDNAMES=")
	for range MaxKept {
		for _, r := range roles {
			n += len(keptName(run+"-"+seq, r)) + 1
		}
	}
	if n > 128<<10 {
		t.Errorf("LISTEN_FDNAMES of %d kept connections: %d bytes, more than 128 KiB", MaxKept, n)
	}
	t.Logf("%d bytes", n)
}

// Past MaxKept connections a new one is carried but not kept: the store
// refuses nothing, the keeper does, and says so; one ending makes room.
func TestKeeperKeepsMaxKeptAtMost(t *testing.T) {
	st := newMemStore()
	defer st.close()
	k := newKeeper(st)
	k.count.Store(MaxKept - 1)
	c1, b1 := tcpPair(t)
	s, err := newSpliced(c1, b1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	forget, err := k.keep(s)
	if err != nil || st.names() != 4 {
		t.Fatalf("the %dth connection: %v, %d names kept", MaxKept, err, st.names())
	}
	if _, err := k.keep(s); !errors.Is(err, errFull) || st.names() != 4 {
		t.Fatalf("past MaxKept: %v, %d names kept; want errFull and nothing more", err, st.names())
	}
	forget()
	if _, err := k.keep(s); err != nil {
		t.Errorf("after one was forgotten: %v", err)
	}
}
