package spread

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// dying accepts, reads what the client sends first and resets the
// connection without a word: an apiserver killed between the kernel's
// handshake and its first answer.
func dying(t *testing.T) netip.AddrPort {
	return serve(t, func(c net.Conn) {
		c.Read(make([]byte, 100))
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
}

// answering reads a line and answers name: line, then echoes.
func answering(t *testing.T, name string) netip.AddrPort {
	return serve(t, func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		fmt.Fprintf(c, "%s: %s", name, line)
		io.Copy(c, r)
	})
}

func TestGreetingMovesAConnectionWhoseBackendDiesBeforeAnswering(t *testing.T) {
	p := upPool(dying(t), answering(t, "b"))
	c := dialProxy(t, p)
	fmt.Fprint(c, "client hello\n")
	r := bufio.NewReader(c)
	got, err := r.ReadString('\n')
	if err != nil || got != "b: client hello\n" {
		t.Fatalf("got %q, %v; want the second backend's answer to the first bytes, sent again", got, err)
	}
	fmt.Fprint(c, "more")
	c.CloseWrite()
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "more" {
		t.Errorf("after the answer: %q, %v", rest, err)
	}
	if st := p.Status(); st[0].DialFailures != 1 || st[1].Connections != 1 {
		t.Errorf("pool %+v: want the dying backend marked once, the other carrying the connection", st)
	}
}

// More than maxReplay before any answer cannot be sent again: the client
// sees the failure.
func TestGreetingGivesUpPastMaxReplay(t *testing.T) {
	p := upPool(dying(t), answering(t, "b"))
	c := dialProxy(t, p)
	go c.Write([]byte(strings.Repeat("x", maxReplay+1)))
	if b, err := io.ReadAll(c); err == nil && len(b) > 0 {
		t.Errorf("read %q, want the connection ended", b)
	}
}

// closing accepts, reads what the client sends first and closes the
// connection (FIN), as a TLS server does when its client leaves in the
// handshake.
func closing(t *testing.T) netip.AddrPort {
	return serve(t, func(c net.Conn) {
		io.Copy(io.Discard, c)
		c.Close()
	})
}

// A client that half closes before any answer and a backend that then
// closes unanswered: the backend answered the close. The connection ends,
// nothing is retried and no backend is blamed. Only a reset is a failure.
func TestGreetingEndsWithTheClientsEarlyHalfClose(t *testing.T) {
	p := upPool(closing(t), answering(t, "b"))
	c := dialProxy(t, p)
	fmt.Fprint(c, "bye\n")
	c.CloseWrite()
	if b, _ := io.ReadAll(c); len(b) > 0 {
		t.Errorf("got %q, want the connection ended unanswered", b)
	}
	idle(t, p)
	if st := p.Status(); st[0].DialFailures != 0 || st[1].Connections != 0 {
		t.Errorf("pool %+v: want no backend blamed, no retry", st)
	}
}

// An answer to a half-closed client still reaches it.
func TestGreetingAnswersAHalfClosedClient(t *testing.T) {
	c := dialProxy(t, upPool(answering(t, "b")))
	fmt.Fprint(c, "bye\n")
	c.CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "b: bye\n" {
		t.Errorf("got %q, %v", b, err)
	}
}

// The client's EOF waiting when the backend's answer came: handOver takes
// it and still clears the read deadline it set, or pipe's first read of
// the client would fail and cut the connection.
func TestHandOverClearsTheDeadlineOnAnEarlyEOF(t *testing.T) {
	client, peer := net.Pipe()
	defer client.Close()
	defer peer.Close()
	backendSide, backendPeer := net.Pipe()
	defer backendSide.Close()
	defer backendPeer.Close()
	ch := make(chan chunk, 1)
	ch <- chunk{err: io.EOF}
	close(ch)
	g := &greeting{c: client, chunks: ch}
	if err := g.handOver(backendSide); err != nil {
		t.Fatal(err)
	}
	go peer.Write([]byte("x"))
	if _, err := client.Read(make([]byte, 1)); err != nil {
		t.Errorf("reading the client after handOver: %v, want the byte (deadline cleared)", err)
	}
}

// silentAfterHello accepts and reads the client's first bytes, and never
// answers: an apiserver frozen (SIGSTOP, a cgroup freeze) whose kernel
// still completes handshakes.
func silentAfterHello(t *testing.T) netip.AddrPort {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	return serve(t, func(c net.Conn) {
		defer c.Close()
		c.Read(make([]byte, 100))
		<-hold
	})
}

// A backend that takes the client's first bytes and does not answer them
// in time loses the connection, with those bytes, to the next one; the
// last one left is waited for.
func TestGreetingMovesAConnectionWhoseBackendDoesNotAnswer(t *testing.T) {
	p := upPool(silentAfterHello(t), answering(t, "b"))
	addr, _ := runProxy(t, &Proxy{Pool: p, Log: slog.New(slog.DiscardHandler), AnswerWithin: 200 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	fmt.Fprint(c, "client hello\n")
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "b: client hello\n" {
		t.Fatalf("got %q, %v; want the second backend's answer to the first bytes, sent again", got, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("moved after %v, before the answer was due", d)
	}
	if st := p.Status(); st[0].DialFailures != 1 || st[1].Connections != 1 {
		t.Errorf("pool %+v: want the silent backend marked once, the other carrying the connection", st)
	}

	// The silent one alone: it is the last left, waited for past the bound.
	alone := NewPool([]Backend{{Addr: silentAfterHello(t)}})
	addr, _ = runProxy(t, &Proxy{Pool: alone, Log: slog.New(slog.DiscardHandler), AnswerWithin: 50 * time.Millisecond})
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprint(c2, "client hello\n")
	c2.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c2.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the only backend, silent: %v, want the connection kept open (the client's own time-out decides)", err)
	}
}
