package status

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics, /healthz, /readyz and /status.
func Handler(m *Metrics, snapshot func() Snapshot) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !snapshot().Ready {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if !fromThisHost(r) {
			http.Error(w, "/status answers the node itself only: run novaedge-cpvip status on the node\n", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(snapshot())
	})
	return mux
}

// fromThisHost says whether r came from this host: from loopback, or from
// the address it reached (a connection from a host to one of its own
// addresses has that address as its source; Linux drops packets from
// outside that claim a local source). /status tells more than the metrics
// (the check's last error, the transitions' reasons, the MAC of a host
// answering for the VIP): no secret, but not for every host that reaches a
// metrics port opened beyond loopback (the static pod's) either.
func fromThisHost(r *http.Request) bool {
	remote, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if remote.Addr().Unmap().IsLoopback() {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	l, err := netip.ParseAddrPort(local.String())
	return err == nil && l.Addr().Unmap() == remote.Addr().Unmap()
}

// Serve serves h on addr until ctx ends, in the background. The address
// may be taken (any local user can bind a port on 127.0.0.1 first): that
// never stops the daemon, whose job is the VIP. Serve logs it and tries
// again, retryMin then doubling to retryMax, until it can listen.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) {
	go serve(ctx, addr, h, log)
}

const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

func serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) {
	var lc net.ListenConfig
	wait := retryMin
	for tries := 0; ; tries++ {
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err == nil {
			log.Info("Serving metrics and status", "addr", addr)
			run(ctx, ln, h, addr, log)
			return
		}
		if tries == 0 || wait == retryMax && tries%10 == 0 {
			log.Warn("Cannot listen for metrics and status, retrying; the VIP is not affected", "addr", addr, "error", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

func run(ctx context.Context, ln net.Listener, h http.Handler, addr string, log *slog.Logger) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("Metrics and status endpoint stopped", "addr", addr, "error", err)
	}
}
