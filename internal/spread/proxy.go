package spread

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/health"
)

// ConnectTimeout is how long a dial to a backend may take before the next
// backend is tried. A backend's kernel answers a SYN in well under a
// millisecond on a LAN; one that does not within this has a full accept
// queue (its apiserver overloaded, or dying under SIGKILL and accepting
// no more) or is gone, and its SYN's retransmission would come only after
// a second, when the client's own time-out may have passed.
const ConnectTimeout = 250 * time.Millisecond

// LastConnectTimeout is the dial time-out of the last backend left to try:
// client-go's own dial time-out, so the kernel's retries get their chance
// and a client long gone holds no dial.
const LastConnectTimeout = 30 * time.Second

// AnswerTimeout is how long a backend may take to answer the client's
// first bytes (a TLS ClientHello: an apiserver answers in milliseconds,
// a CPU-starved one in tens) before the connection, with those bytes, goes
// to the next backend: the apiserver is frozen or wedged though its kernel
// completes handshakes. When no healthy backend is left to try, this one
// is waited for as long as the client waits (client-go's TLS handshake
// time-out: 10 s): a slow answer beats none.
const AnswerTimeout = 2 * time.Second

// Dialer dials a backend; ctx carries the time-out.
type Dialer func(ctx context.Context, b Backend) (net.Conn, error)

// Proxy accepts the connections Steer hands it and carries each to a
// backend of Pool. One Proxy serves one listener.
type Proxy struct {
	Pool *Pool
	Dial Dialer // nil: TCP; the local backend on 127.0.0.1, else ::1
	Log  *slog.Logger
	// AnswerWithin overrides AnswerTimeout (tests); 0: AnswerTimeout.
	AnswerWithin time.Duration
	// Gate, if set, counts the connections carried (the caps).
	Gate *Gate
	// Keep, if set, keeps each carried connection beyond the process, for
	// a later run to adopt (Adopt).
	Keep Keeper

	keepOnce   sync.Once
	kept       *keeper
	keepFailed atomic.Bool
	// detach: Serve's end leaves the spliced connections to a successor
	// (Detach) instead of closing them.
	detach atomic.Bool

	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{} // open client and backend connections, closed at shutdown
	spliced map[*spliced]struct{} // of those, the ones carried in the kernel
	closing bool
}

// Serve accepts on ln until ctx ends, then closes ln and every connection
// it carries, both sides (with Detach, those carried in the kernel are
// left to a successor), and returns once their goroutines have.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				// Out of file descriptors, say: as net/http, wait 5 ms
				// doubling to 1 s rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				p.Log.Warn("Accepting a connection to spread failed", "error", err, "retry_in", backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			break
		}
		backoff = 0
		if !p.track(c) {
			c.Close()
			continue
		}
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.Gate.Enter()
			p.Gate.Leave(!p.carry(ctx, c))
		}()
	}
	p.closeAll(p.detach.Load())
	p.wg.Wait()
}

// Detach makes Serve's end leave every connection carried in the kernel
// as it is, kept in the store for a successor to adopt, and close only
// the others (awaiting an answer). Call it before Serve's context ends.
func (p *Proxy) Detach() { p.detach.Store(true) }

// track adds a connection, counting a goroutine for a client's; false
// when shutting down (the caller closes it).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// trackBackend adds a backend connection (no goroutine of its own).
func (p *Proxy) trackBackend(b net.Conn) bool {
	if !p.track(b) {
		return false
	}
	p.wg.Done()
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// closeAll closes every connection, clients' and backends': a half-closed
// client waiting on a silent backend ends too. With detach, a connection
// carried in the kernel is detached instead, when it is kept (a Keeper).
func (p *Proxy) closeAll(detach bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closing = true
	left := map[net.Conn]bool{}
	for s := range p.spliced {
		if detach && p.Keep != nil {
			s.detach()
		} else {
			s.cut()
		}
		left[s.c], left[s.b] = true, true
	}
	for c := range p.conns {
		if !left[c] {
			c.Close()
		}
	}
}

// carrying registers s as carried in the kernel until the returned func;
// past a detaching end of Serve, s is detached at once.
func (p *Proxy) carrying(s *spliced) (done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing && p.detach.Load() && p.Keep != nil {
		s.detach()
	}
	if p.spliced == nil {
		p.spliced = map[*spliced]struct{}{}
	}
	p.spliced[s] = struct{}{}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.spliced, s)
	}
}

// carry connects the client c to a backend and copies both ways until
// both sides are done. A backend that refuses, does not answer the dial,
// resets the connection before it has sent a byte (an apiserver dying
// between the kernel's handshake and its own) or does not answer the
// client's first bytes within AnswerTimeout is marked and the next one
// tried, with what the client sent so far sent again (greet): the client
// never sees the failure. Safe to send again: over TLS no request reaches
// the apiserver before its first answer. A close (FIN) is passed on. It
// says whether a backend answered (Gate.Greeted was called then).
func (p *Proxy) carry(ctx context.Context, c net.Conn) (greeted bool) {
	defer c.Close()
	g := newGreeting(c)
	defer g.stop()
	tried := make([]bool, p.Pool.Len())
	for {
		i, be, ok := p.Pool.Pick(tried)
		if !ok {
			p.Log.Warn("No backend took a connection: closing it", "client", c.RemoteAddr().String())
			return false
		}
		tried[i] = true
		last := !slices.Contains(tried, false)
		b, err := p.dial(ctx, be, last)
		if err != nil {
			p.Pool.DialFailed(i)
			p.Log.Info("Connecting to a backend failed: trying the next", "backend", be.Addr.String(), "error", err)
			continue
		}
		if !p.trackBackend(b) {
			b.Close()
			return false
		}
		defer p.untrack(b)
		p.Pool.Opened(i)
		within := cmp.Or(p.AnswerWithin, AnswerTimeout)
		if !p.Pool.UpLeft(tried) {
			within = 0 // nothing better to move it to: as long as the client waits
		}
		switch err := g.greet(b, within); {
		case errors.Is(err, errClientGone):
			b.Close()
			p.Pool.Closed(i)
			return false
		case err != nil:
			b.Close()
			p.Pool.Closed(i)
			p.Pool.DialFailed(i)
			if !g.replayable() {
				p.Log.Warn("A backend failed before answering and the client's first bytes were too many to send again: closing it",
					"backend", be.Addr.String(), "error", err)
				return false
			}
			p.Log.Info("A backend failed before answering: sending the connection to the next", "backend", be.Addr.String(), "error", err)
			continue
		}
		p.Gate.Greeted()
		p.carryOn(i, c, b)
		p.Pool.Closed(i)
		return true
	}
}

// carryOn copies between c and b, carried to backend i, until both are
// done: in the kernel, through pipes of ours that, with both sockets, are
// kept beyond the process when Keep is set (spliced); other connections
// by pipe.
func (p *Proxy) carryOn(i int, c, b net.Conn) {
	tc, ok1 := c.(*net.TCPConn)
	tb, ok2 := b.(*net.TCPConn)
	var s *spliced
	var err error
	if ok1 && ok2 {
		if s, err = newSpliced(tc, tb); err != nil {
			p.Log.Warn("Cannot make the pipes of a carried connection: copying it without (a restart of ours will cut it)", "error", err)
		}
	}
	if s == nil {
		done := p.Pool.Carried(i, func() { c.Close(); b.Close() })
		pipe(c, b)
		done()
		return
	}
	defer p.Pool.Carried(i, s.cut)()
	defer p.carrying(s)() // before it is kept: a detach from now on leaves it whole
	forget, err := p.keeper().keep(s)
	if err != nil && !p.keepFailed.Swap(true) { // once: a store that refuses one refuses the next
		p.Log.Warn("Cannot keep a carried connection beyond the process: a restart of ours will cut it", "error", err)
	}
	if !s.run() {
		forget()
	}
}

func (p *Proxy) keeper() *keeper {
	p.keepOnce.Do(func() { p.kept = newKeeper(p.Keep) })
	return p.kept
}

// Adopt carries on the connections a previous run carried, as Serve the
// ones it accepts, until Serve's context ends, and says how many. A
// connection to a backend the pool no longer has is closed.
func (p *Proxy) Adopt(as []Adopted) (carried int) {
	for _, a := range as {
		i, ok := p.Pool.index(a.Backend)
		if !ok {
			p.Log.Info("A connection a previous run carried goes to a backend no longer listed: closing it", "backend", a.Backend.String())
			a.Close()
			p.keeper().forgetter(a.ID)()
			continue
		}
		p.keeper().adopted()
		forget := p.keeper().forgetter(a.ID)
		if !p.track(a.s.c) {
			a.Close()
			forget()
			continue
		}
		p.trackBackend(a.s.b)
		stop := p.carrying(a.s)
		p.Pool.Adopted(i)
		p.Gate.Enter()
		p.Gate.Greeted()
		carried++
		go func() {
			defer p.wg.Done()
			defer p.untrack(a.s.c)
			defer p.untrack(a.s.b)
			done := p.Pool.Carried(i, a.s.cut)
			if !a.s.run() {
				forget()
			}
			stop()
			done()
			p.Pool.Closed(i)
			p.Gate.Leave(false)
		}()
	}
	return carried
}

// dial connects to backend be within ConnectTimeout, LastConnectTimeout
// when it is the last one left. The local apiserver is dialled as the
// health check reaches it (localhost: 127.0.0.1, else ::1: an apiserver
// may listen on one family only).
func (p *Proxy) dial(ctx context.Context, be Backend, last bool) (net.Conn, error) {
	timeout := ConnectTimeout
	if last {
		timeout = LastConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.Dial != nil {
		return p.Dial(ctx, be)
	}
	var d net.Dialer
	tcp := func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	if be.Local {
		return health.DialHost(ctx, tcp, "localhost", strconv.Itoa(int(be.Addr.Port())))
	}
	return tcp(ctx, be.Addr.String())
}

// halfCloser is a connection whose sending side closes alone (TCP).
type halfCloser interface{ CloseWrite() error }

// pipe copies a to b and b to a; the end of one direction closes the
// sending side of the other connection (a client's half close reaches the
// apiserver), an error closes both. Returns when both directions are done,
// with both connections closed. io.Copy between TCP connections splices in
// the kernel.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	cp := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if hc, ok := dst.(halfCloser); ok && err == nil {
			hc.CloseWrite()
		} else {
			dst.Close()
			src.Close()
		}
	}
	go func() { cp(b, a); close(done) }()
	cp(a, b)
	<-done
	a.Close()
	b.Close()
}
