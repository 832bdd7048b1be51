package spread

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// serve runs a TCP server on loopback that hands each connection to
// handle on a goroutine of its own, until the test ends.
func serve(t *testing.T, handle func(net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return netip.MustParseAddrPort(ln.Addr().String())
}

// backend says its name and echoes.
func backend(t *testing.T, name string) netip.AddrPort {
	return serve(t, func(c net.Conn) {
		defer c.Close()
		fmt.Fprintln(c, name)
		io.Copy(c, c)
	})
}

// refusing is a loopback address and port nobody listens on.
func refusing(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	return a
}

func startProxy(t *testing.T, p *Pool) string {
	addr, _ := runProxy(t, &Proxy{Pool: p, Log: slog.New(slog.DiscardHandler)})
	return addr
}

// runProxy serves px on a loopback listener until the test ends or stop
// is called; stop says whether Serve returned within 5 s.
func runProxy(t *testing.T, px *Proxy) (addr string, stop func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { px.Serve(ctx, ln); close(done) }()
	stop = func() bool {
		cancel()
		select {
		case <-done:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), stop
}

// upPool is a pool of addrs, every one healthy.
func upPool(addrs ...netip.AddrPort) *Pool {
	bs := make([]Backend, len(addrs))
	for i, a := range addrs {
		bs[i].Addr = a
	}
	p := NewPool(bs)
	for i := range bs {
		p.SetHealth(i, Up)
	}
	return p
}

// dialProxy starts a proxy of p and connects to it, with a 5 s deadline.
func dialProxy(t *testing.T, p *Pool) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", startProxy(t, p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c.(*net.TCPConn)
}

// hello connects through the proxy, reads the backend's name and checks
// the echo both ways, half close included.
func hello(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's name: %v", err)
	}
	fmt.Fprint(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "ping" {
		t.Fatalf("echo %q, %v; want ping and the backend's close", rest, err)
	}
	return strings.TrimSpace(name)
}

func TestProxySpreadsAndRetriesRefused(t *testing.T) {
	p := NewPool([]Backend{{Addr: backend(t, "a")}, {Addr: refusing(t)}, {Addr: backend(t, "c")}})
	for i := range 3 {
		p.SetHealth(i, Up) // the refusing one too: its check has not caught up yet
	}
	addr := startProxy(t, p)
	count := map[string]int{}
	for range 30 {
		count[hello(t, addr)]++
		idle(t, p) // the proxy counts the connection closed a moment after the client sees it end
	}
	if count["a"] != 15 || count["c"] != 15 {
		t.Errorf("backends took %v, want 15 each and the refusing one's connection retried", count)
	}
	st := p.Status()
	if st[1].DialFailures != 1 || !st[1].DialFailed {
		t.Errorf("refusing backend: %+v, want one failed dial, then no more tries", st[1])
	}
	if st[0].Active != 0 || st[2].Active != 0 {
		t.Errorf("active connections after all closed: %d, %d", st[0].Active, st[2].Active)
	}
}

func idle(t *testing.T, p *Pool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		active := 0
		for _, b := range p.Status() {
			active += b.Active
		}
		if active == 0 {
			return
		}
	}
	t.Fatal("connections still counted active 5 s after they ended")
}

func TestProxyClosesWhenEveryBackendRefuses(t *testing.T) {
	c := dialProxy(t, NewPool([]Backend{{Addr: refusing(t)}, {Addr: refusing(t)}}))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("read %d bytes, want the connection closed", n)
	}
}

// A long-lived connection is not cut by any timeout of ours, and the
// proxy's shutdown closes it.
func TestProxyKeepsIdleConnectionsAndClosesThemAtShutdown(t *testing.T) {
	addr, stop := runProxy(t, &Proxy{Pool: NewPool([]Backend{{Addr: backend(t, "a")}}), Log: slog.New(slog.DiscardHandler)})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // idle past ConnectTimeout
	fmt.Fprint(c, "x")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := r.ReadByte(); err != nil || b != 'x' {
		t.Fatalf("echo after idling: %q, %v", b, err)
	}
	if !stop() {
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := r.ReadByte(); err == nil {
		t.Error("connection still open after shutdown")
	}
}

// A backend whose SYNs go unanswered (a full accept queue, a host gone)
// costs a connection ConnectTimeout; the last one left gets
// LastConnectTimeout.
func TestProxyDialTimesOutShortButForTheLast(t *testing.T) {
	silent := netip.MustParseAddrPort("192.0.2.1:6443") // stands for a SYN never answered
	var timeouts []time.Duration
	dial := func(ctx context.Context, b Backend) (net.Conn, error) {
		d, _ := ctx.Deadline()
		timeouts = append(timeouts, time.Until(d))
		if b.Addr == silent {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", b.Addr.String())
	}
	addr, _ := runProxy(t, &Proxy{Pool: upPool(silent, backend(t, "b")), Dial: dial, Log: slog.New(slog.DiscardHandler)})
	start := time.Now()
	if name := hello(t, addr); name != "b" {
		t.Fatalf("answered by %q", name)
	}
	if took := time.Since(start); took < ConnectTimeout || took > ConnectTimeout+time.Second {
		t.Errorf("took %v, want about ConnectTimeout (%v)", took, ConnectTimeout)
	}
	if len(timeouts) != 2 || timeouts[0] > ConnectTimeout || timeouts[1] <= ConnectTimeout || timeouts[1] > LastConnectTimeout {
		t.Errorf("time-outs of the dials %v, want ConnectTimeout for the first, LastConnectTimeout for the last", timeouts)
	}
}

// Shutdown ends a connection whose client half closed while its backend
// stays silent: both sides are closed, Serve returns.
func TestProxyShutdownClosesBackendsToo(t *testing.T) {
	silent := serve(t, func(c net.Conn) { io.Copy(io.Discard, c); time.Sleep(time.Minute) })
	p := upPool(silent)
	addr, stop := runProxy(t, &Proxy{Pool: p, Log: slog.New(slog.DiscardHandler)})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "hello")
	c.(*net.TCPConn).CloseWrite()
	for deadline := time.Now().Add(5 * time.Second); p.Status()[0].Active == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no connection to the backend")
		}
	}
	if !stop() {
		t.Fatal("Serve still waits on a silent backend 5 s after its context ended")
	}
}

// A backend marked Down loses the connections it carries (its clients
// reconnect at once, to one that answers); the other backends' stay.
func TestProxyCutsTheConnectionsOfABackendMarkedDown(t *testing.T) {
	p := upPool(backend(t, "a"), backend(t, "b"))
	addr := startProxy(t, p)
	conns := map[string]*bufio.Reader{}
	for len(conns) < 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(c)
		name, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		conns[strings.TrimSpace(name)] = r
		t.Cleanup(func() { c.Close() })
	}
	p.SetHealth(1, Down)
	if _, err := conns["b"].ReadByte(); err == nil {
		t.Error("b's connection still open after b was marked down")
	}
	if st := p.Status(); st[0].Active != 1 {
		t.Errorf("a carries %d, want its one connection kept", st[0].Active)
	}
	// With no other backend up (a failure every apiserver shares) a
	// reconnect would find nothing better: a's connection stays.
	p.SetHealth(0, Down)
	conns["a"].Discard(0)
	time.Sleep(50 * time.Millisecond)
	if st := p.Status(); st[0].Active != 1 {
		t.Errorf("a carries %d after it was marked down with no other backend up, want its connection kept", st[0].Active)
	}
}
