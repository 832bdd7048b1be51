package status

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// TestStatusThisHostOnly: /status answers the node itself (from loopback,
// or from the address it listens on); the metrics answer whoever reaches
// the port (a metrics address beyond loopback is for a cluster's
// Prometheus).
func TestStatusThisHostOnly(t *testing.T) {
	snap := func() Snapshot { return Snapshot{Mode: "l2", Ready: true} }
	h := Handler(NewMetrics(snap, NewJournal(time.Now)), snap)
	for _, c := range []struct {
		path, from string
		want       int
		local      string // the address the request reached
	}{
		{"/status", "192.0.2.11:40000", http.StatusOK, "192.0.2.11:9450"},
		{"/status", "[2001:db8::11]:40000", http.StatusOK, "[2001:db8::11]:9450"},
		{"/status", "192.0.2.1:40000", http.StatusForbidden, "192.0.2.11:9450"},
		{"/status", "127.0.0.1:40000", http.StatusOK, ""},
		{"/status", "[::1]:40000", http.StatusOK, ""},
		{"/status", "[::ffff:127.0.0.1]:40000", http.StatusOK, ""},
		{"/status", "192.0.2.1:40000", http.StatusForbidden, ""},
		{"/status", "[2001:db8::1]:40000", http.StatusForbidden, ""},
		{"/status", "garbage", http.StatusForbidden, ""},
		{"/metrics", "192.0.2.1:40000", http.StatusOK, ""},
		{"/readyz", "192.0.2.1:40000", http.StatusOK, ""},
		{"/healthz", "192.0.2.1:40000", http.StatusOK, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		r.RemoteAddr = c.from
		if c.local != "" {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(c.local))))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("GET %s from %s: %d, want %d", c.path, c.from, w.Code, c.want)
		}
	}
}
