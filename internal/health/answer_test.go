package health

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An apiserver (or whatever squats on its port) that answers with endless
// headers fails the check once the answer passes 128 KiB: the daemon's
// memory does not grow with what a server sends. A normal answer after it,
// on a new connection, passes.
func TestEndlessHeadersFailTheCheck(t *testing.T) {
	var endless atomic.Bool
	endless.Store(true)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !endless.Load() {
			fmt.Fprint(w, "ok")
			return
		}
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprint(buf, "HTTP/1.1 200 OK\r\n")
		line := "X-Junk: " + strings.Repeat("a", 1000) + "\r\n"
		for range 10_000 { // 10 MB of headers, unless the reader stops first
			if _, err := fmt.Fprint(buf, line); err != nil {
				return
			}
		}
		buf.Flush()
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/livez", Interval: time.Second, Timeout: 5 * time.Second,
		FailThreshold: 1, RiseThreshold: 1, InsecureSkipVerify: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Check(context.Background()); r.OK() || !strings.Contains(r.Reason, "128 KiB") {
		t.Fatalf("endless headers: %+v, want a failure naming the limit", r)
	}
	endless.Store(false)
	if r := c.Check(context.Background()); !r.OK() {
		t.Fatalf("a normal answer after: %+v", r)
	}
}
