package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/novaedge/cpvip/test/lab"
)

// longLivedConns is how many connections stand for a cluster's watches
// (every kubelet's and controller's) in the tests that count what a
// restart of ours cuts.
const longLivedConns = 30

// longLived is connections through the VIP kept open between requests
// (HTTP/1.1 keep-alive), as client-go keeps its watches: each has asked
// /livez once; alive asks again on the same connection.
type longLived struct {
	conns []*tls.Conn
	rs    []*bufio.Reader
	took  []time.Duration // the last round's answers
}

// openLongLived opens n connections from h to addr (VIP:6443), each
// answered once.
func openLongLived(t testing.TB, h *lab.Host, addr string, n int) *longLived {
	t.Helper()
	l := &longLived{}
	t.Cleanup(l.close)
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		raw, err := h.Dial(ctx, addr)
		cancel()
		if err != nil {
			t.Fatalf("opening a long-lived connection to %s: %v", addr, err)
		}
		c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) // the lab's; what is counted is the connection
		l.conns, l.rs = append(l.conns, c), append(l.rs, bufio.NewReader(c))
		if err := l.ask(len(l.conns) - 1); err != nil {
			t.Fatalf("the first request of a long-lived connection to %s: %v", addr, err)
		}
	}
	// Their second requests: the latency a step is compared with (the
	// first one's includes the TLS handshake).
	l.took = nil
	for i := range l.conns {
		if err := l.ask(i); err != nil {
			t.Fatalf("the second request of a long-lived connection to %s: %v", addr, err)
		}
	}
	return l
}

// median is the median answer time of the last round.
func (l *longLived) median() time.Duration {
	if len(l.took) == 0 {
		return 0
	}
	s := slices.Clone(l.took)
	slices.Sort(s)
	return s[len(s)/2]
}

// ask sends GET /livez on connection i and reads the answer.
func (l *longLived) ask(i int) error {
	start := time.Now()
	defer func() { l.took = append(l.took, time.Since(start)) }()
	c := l.conns[i]
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "GET /livez HTTP/1.1\r\nHost: kubernetes\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(l.rs[i], nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// cut asks again on every connection and says how many failed (with the
// first error): the connections a step cut. The answers' median time
// before and now is logged (an adopted connection answers as fast).
func (l *longLived) cut(t testing.TB) (n int, first error) {
	t.Helper()
	before := l.median()
	l.took = nil
	defer func() {
		t.Logf("long-lived connections: %d of %d cut; answers' median %s before, %s after", n, len(l.conns), before.Round(10*time.Microsecond), l.median().Round(10*time.Microsecond))
	}()
	for i := range l.conns {
		if err := l.ask(i); err != nil {
			n++
			if first == nil {
				first = err
			}
		}
	}
	return n, first
}

func (l *longLived) close() {
	for _, c := range l.conns {
		c.Close()
	}
}
