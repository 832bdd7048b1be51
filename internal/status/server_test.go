package status

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStatusLoopbackOnly: /status answers the node itself; the metrics
// answer whoever reaches the port (a metrics address beyond loopback is
// for a cluster's Prometheus).
func TestStatusLoopbackOnly(t *testing.T) {
	snap := func() Snapshot { return Snapshot{Mode: "l2", Ready: true} }
	h := Handler(NewMetrics(snap, NewJournal(time.Now)), snap)
	for _, c := range []struct {
		path, from string
		want       int
	}{
		{"/status", "127.0.0.1:40000", http.StatusOK},
		{"/status", "[::1]:40000", http.StatusOK},
		{"/status", "[::ffff:127.0.0.1]:40000", http.StatusOK},
		{"/status", "192.0.2.1:40000", http.StatusForbidden},
		{"/status", "[2001:db8::1]:40000", http.StatusForbidden},
		{"/status", "garbage", http.StatusForbidden},
		{"/metrics", "192.0.2.1:40000", http.StatusOK},
		{"/readyz", "192.0.2.1:40000", http.StatusOK},
		{"/healthz", "192.0.2.1:40000", http.StatusOK},
	} {
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		r.RemoteAddr = c.from
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("GET %s from %s: %d, want %d", c.path, c.from, w.Code, c.want)
		}
	}
}
