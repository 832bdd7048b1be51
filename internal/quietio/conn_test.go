package quietio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func pair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	q, err := NewConn(c.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	return q, s
}

// TestConnCarriesData: a write larger than the socket buffers arrives whole
// (the writer waits while the buffer is full), and what the other side
// sends is read back, then EOF when it closes.
func TestConnCarriesData(t *testing.T) {
	q, s := pair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	got := make(chan []byte)
	go func() { b, _ := io.ReadAll(io.LimitReader(s, int64(len(big)))); got <- b }()
	if n, err := q.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the other side read %d bytes, not what was written", len(b))
	}
	if _, err := s.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b, err := io.ReadAll(q)
	if string(b) != "answer" || err != nil {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
}

// TestConnDeadline: a read past the connection's deadline fails as net's
// does, and the connection is still usable after it.
func TestConnDeadline(t *testing.T) {
	q, s := pair(t)
	if err := q.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	_, err := q.Read(b[:])
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past the deadline: %v", err)
	}
	_ = q.SetReadDeadline(time.Time{})
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Read(b[:]); n != 1 || err != nil {
		t.Fatalf("Read after the deadline = %d, %v", n, err)
	}
	q.Close()
	if _, err := q.Read(b[:]); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
}
