package spread

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// maxReplay is how much of what a client sends before the backend's first
// answer is kept to send again to another backend: a TLS ClientHello is a
// few kilobytes, and the client waits for the server's hello before it
// sends more.
const maxReplay = 64 << 10

// errClientGone: the client closed or reset its connection before the
// backend answered; nothing is left to carry.
var errClientGone = errors.New("the client went away")

type chunk struct {
	b   []byte
	err error
}

// greeting is a client connection until a backend's first answer: what
// the client sent so far, kept to send again (sent; nil once more than
// maxReplay), and whether it has half closed.
type greeting struct {
	c        net.Conn
	chunks   chan chunk // the client's reads, nil once it has ended
	sent     []byte
	overflow bool
	eof      bool
}

// newGreeting starts reading the client.
func newGreeting(c net.Conn) *greeting {
	g := &greeting{c: c, chunks: make(chan chunk)}
	go read(c, g.chunks)
	return g
}

// read sends out each read of c, the last one with its error, and closes out.
func read(c net.Conn, out chan<- chunk) {
	defer close(out)
	for {
		buf := make([]byte, 16<<10)
		n, err := c.Read(buf)
		out <- chunk{b: buf[:n], err: err}
		if err != nil {
			return
		}
	}
}

// replayable says whether all the client sent is kept.
func (g *greeting) replayable() bool { return !g.overflow }

// take records one chunk read from the client and forwards it to b.
func (g *greeting) take(ch chunk, b net.Conn) (backendErr, clientErr error) {
	if len(ch.b) > 0 {
		if !g.overflow {
			g.sent = append(g.sent, ch.b...)
			if len(g.sent) > maxReplay {
				g.overflow, g.sent = true, nil
			}
		}
		if _, err := b.Write(ch.b); err != nil {
			return err, nil
		}
	}
	switch {
	case ch.err == nil:
	case errors.Is(ch.err, io.EOF):
		g.eof, g.chunks = true, nil
		if hc, ok := b.(halfCloser); ok {
			hc.CloseWrite()
		}
	default:
		g.chunks = nil
		return nil, ch.err
	}
	return nil, nil
}

// errNoAnswer: the backend took the client's first bytes and did not
// answer them in time (a frozen or wedged apiserver whose kernel still
// completes handshakes).
var errNoAnswer = errors.New("no answer to the client's first bytes")

// greet sends b what the client has sent so far and carries the client's
// bytes on until b's first answer, which it passes to the client. An error
// says b failed before answering (try another: greet again), or
// errClientGone. within bounds how long b may take to answer once it has
// the client's first bytes (0: as long as it takes).
func (g *greeting) greet(b net.Conn, within time.Duration) error {
	if len(g.sent) > 0 {
		if _, err := b.Write(g.sent); err != nil {
			return err
		}
	}
	if g.eof {
		if hc, ok := b.(halfCloser); ok {
			hc.CloseWrite()
		}
	}
	first := make(chan chunk, 1)
	go func() {
		buf := make([]byte, 16<<10)
		n, err := b.Read(buf)
		first <- chunk{b: buf[:n], err: err}
	}()
	// The answer is owed from the client's first byte on: a server that
	// speaks first is not timed.
	var owed <-chan time.Time
	var timer *time.Timer
	owe := func() {
		if timer == nil && within > 0 && (len(g.sent) > 0 || g.overflow) {
			timer = time.NewTimer(within)
			owed = timer.C
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	owe()
	for {
		select {
		case ch := <-g.chunks:
			berr, cerr := g.take(ch, b)
			if cerr != nil {
				return errClientGone
			}
			if berr != nil {
				return berr
			}
			owe()
		case <-owed:
			return errNoAnswer
		case r := <-first:
			if len(r.b) == 0 && (r.err == nil || errors.Is(r.err, io.EOF)) {
				// A close, not a failure: the backend ends the connection
				// as it chose to (a TLS server whose client left in the
				// handshake closes; a dying one resets). Passed on.
				return g.handOver(b)
			}
			if len(r.b) == 0 {
				return r.err
			}
			if _, err := g.c.Write(r.b); err != nil {
				return errClientGone
			}
			return g.handOver(b)
		}
	}
}

// handOver stops reading the client here, forwarding what was read, so
// that pipe copies the rest in the kernel.
func (g *greeting) handOver(b net.Conn) error {
	if g.chunks == nil {
		return nil
	}
	g.c.SetReadDeadline(time.Unix(1, 0)) // in the past: the reader's Read returns
	// Cleared on every way out: left in the past, pipe's first read of the
	// client would fail (an EOF chunk may come before the deadline's).
	defer g.c.SetReadDeadline(time.Time{})
	for ch := range g.chunks {
		if errors.Is(ch.err, os.ErrDeadlineExceeded) {
			ch.err = nil
			berr, _ := g.take(ch, b)
			g.chunks = nil
			if berr != nil {
				return errClientGone // the backend failed after its answer: nothing to retry
			}
			return nil
		}
		berr, cerr := g.take(ch, b)
		if cerr != nil || berr != nil {
			return errClientGone
		}
		if g.chunks == nil { // the client half closed
			return nil
		}
	}
	return nil
}

// stop lets the reader end if it still runs: it returns once the client
// connection is closed.
func (g *greeting) stop() {
	if g.chunks != nil {
		go func(ch chan chunk) {
			for range ch {
			}
		}(g.chunks)
	}
}
