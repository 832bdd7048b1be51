package spread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/quietio"
)

// Config is what a Spreader needs; cmd fills it from config.Config.
type Config struct {
	VIPs []netip.Addr
	Port uint16
	// Remotes are the other apiservers' addresses (on Port).
	Remotes []netip.Addr
	// NewChecker builds the health check of the apiserver at base
	// (https://base/livez, and /readyz for a drain), as our own node's.
	NewChecker func(base netip.AddrPort) (*health.Checker, error)
	// Keep, if set, keeps every carried connection beyond the process
	// (systemd's descriptor store): a restart or a SIGKILL of ours cuts
	// none; Adopted are those a previous run kept (AdoptFiles).
	Keep    Keeper
	Adopted []Adopted
}

// Spreader runs the spreading: the pool, the remote backends' checks, the
// proxy and the steering. Backend 0 is the local apiserver, its health
// given by SetLocal and LocalResult.
type Spreader struct {
	cfg      Config
	pool     *Pool
	checkers []*health.Checker // backend i+1's; nil when it could not be built
	log      *slog.Logger
	active   atomic.Bool
	detach   atomic.Bool
	gate     Gate
}

// Detach makes the end of Run leave the connections it carries to the
// next run of the daemon (a restart systemd queued): kept in the store,
// cut nowhere. Call it before Run's context ends.
func (s *Spreader) Detach() { s.detach.Store(true) }

// localAddr is where the proxy reaches this node's own apiserver first:
// as the health check does (https://localhost:PORT), 127.0.0.1, then ::1.
func localAddr(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port)
}

// New returns a Spreader and builds the remote backends' checks; Run
// starts it.
func New(cfg Config, log *slog.Logger) *Spreader {
	bs := []Backend{{Addr: localAddr(cfg.Port), Local: true}}
	for _, r := range cfg.Remotes {
		bs = append(bs, Backend{Addr: netip.AddrPortFrom(r, cfg.Port)})
	}
	s := &Spreader{cfg: cfg, pool: NewPool(bs), log: log, checkers: make([]*health.Checker, len(cfg.Remotes))}
	for i, r := range cfg.Remotes {
		c, err := cfg.NewChecker(netip.AddrPortFrom(r, cfg.Port))
		if err != nil {
			log.Error("Cannot check a backend: it is tried last", "backend", r.String(), "error", err)
			s.pool.SetHealth(i+1, Down)
			continue
		}
		s.checkers[i] = c
	}
	return s
}

// SetLocal records the local apiserver's health (the node's own check).
func (s *Spreader) SetLocal(st health.State) { s.pool.SetHealth(0, fromState(st)) }

// LocalResult sees each of the node's own checks: a passing one lets the
// local apiserver take connections again after a failed dial.
func (s *Spreader) LocalResult(r health.Result) {
	if r.OK() {
		s.pool.CheckPassed(0)
	}
}

// Tune gives the remote backends' checks a reload's timing, as the node's own.
func (s *Spreader) Tune(t health.Timing) {
	for _, c := range s.checkers {
		if c != nil {
			c.Tune(t)
		}
	}
}

// Status returns every backend's state.
func (s *Spreader) Status() []BackendStatus { return s.pool.Status() }

// Active says whether connections to the VIP are being spread now.
func (s *Spreader) Active() bool { return s.active.Load() }

func fromState(st health.State) Health {
	switch st {
	case health.Healthy:
		return Up
	case health.Draining:
		return Draining
	case health.Unhealthy:
		return Down
	}
	return Unknown
}

// Run spreads until ctx ends. Whatever fails to start is logged and the
// VIP serves from the local apiserver alone, as without spreading. At
// the end the steering goes first: new connections reach the local
// apiserver while the proxy closes what it carried. Cancel ctx once the
// VIP has left this node (cmd: after the agent's handover), or the
// clients would reconnect twice.
func (s *Spreader) Run(ctx context.Context) {
	if len(s.cfg.Remotes) == 0 {
		s.log.Warn("Not spreading: every backend listed is this node's own; the local apiserver serves the VIP alone")
		s.dropAdopted()
		return
	}
	ls, err := s.listen(ctx)
	if err == nil {
		var steer *Steer
		if steer, err = s.steer(ls); err == nil {
			if err := DropBPF(); err != nil {
				s.log.Warn("Cannot drop CAP_BPF after attaching the steering: the daemon keeps it", "error", err)
			}
			s.serve(ctx, ls, steer)
			return
		}
		ls.close()
	}
	args := []any{"error", err}
	if errors.Is(err, os.ErrPermission) {
		args = append(args, "hint", "the sk_lookup program needs CAP_BPF and the bpf system call: "+
			"under systemd, install /usr/share/novaedge-cpvip/spread.conf as a drop-in")
	}
	s.log.Error("Cannot spread connections: the local apiserver serves the VIP alone", args...)
	s.dropAdopted()
}

// dropAdopted closes the connections a previous run kept, when this one
// does not spread.
func (s *Spreader) dropAdopted() {
	if len(s.cfg.Adopted) == 0 {
		return
	}
	Drop(s.cfg.Adopted, s.cfg.Keep)
	s.log.Info("Closed the connections a previous run carried", "count", len(s.cfg.Adopted))
}

// serve runs the checks and a proxy per listener until ctx ends.
func (s *Spreader) serve(ctx context.Context, ls Listeners, steer *Steer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for i, c := range s.checkers {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); s.watch(ctx, i+1, c) }()
		}
	}
	s.gate.Pause = func(paused bool, greeting, carried int) {
		if !paused {
			s.log.Info("Spreading resumed", "awaiting_answer", greeting, "carried", carried)
			if err := steer.Renew(steerLease); err != nil {
				s.log.Warn("Renewing the steering failed: new connections reach the local apiserver alone until it succeeds", "error", err)
			}
			return
		}
		s.log.Warn("Spreading paused: too many connections carried, new ones reach the local apiserver",
			"awaiting_answer", greeting, "carried", carried, "max_awaiting_answer", MaxGreeting, "max_carried", MaxCarried)
		if err := steer.Expire(); err != nil {
			s.log.Warn("Pausing the steering failed", "error", err)
		}
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.renew(ctx, steer) }()
	s.log.Info("Spreading new connections to the VIP over the apiservers", "backends", len(s.cfg.Remotes)+1)
	s.active.Store(true)
	serveCtx, stopServing := context.WithCancel(context.Background())
	adopt := s.cfg.Adopted
	var proxies []*Proxy
	for _, l := range []*net.TCPListener{ls.V4, ls.V6} {
		if l != nil {
			p := &Proxy{Pool: s.pool, Log: s.log, Gate: &s.gate, Keep: s.cfg.Keep}
			proxies = append(proxies, p)
			if len(adopt) > 0 {
				n := p.Adopt(adopt)
				s.log.Info("Adopted the connections a previous run carried", "count", n, "closed", len(adopt)-n)
				adopt = nil
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.Serve(serveCtx, l) }()
		}
	}
	<-ctx.Done()
	s.active.Store(false)
	if err := steer.Close(); err != nil {
		s.log.Warn("Detaching the steering failed", "error", err)
	}
	if s.detach.Load() {
		for _, p := range proxies {
			p.Detach()
		}
	}
	stopServing()
}

// watch feeds backend i's checks into the pool.
func (s *Spreader) watch(ctx context.Context, i int, c *health.Checker) {
	c.OnResult = func(r health.Result) {
		if r.OK() {
			s.pool.CheckPassed(i)
		}
	}
	out := make(chan health.Transition)
	go c.Run(ctx, out)
	for {
		select {
		case tr := <-out:
			if !tr.Changed {
				continue // settledness: not a backend's concern
			}
			s.pool.SetHealth(i, fromState(tr.State))
			s.log.Info("Backend health changed", "backend", s.cfg.Remotes[i-1].String(), "state", tr.State, "reason", tr.Last.Reason)
		case <-ctx.Done():
			return
		}
	}
}

func (l Listeners) close() {
	for _, x := range []*net.TCPListener{l.V4, l.V6} {
		if x != nil {
			x.Close()
		}
	}
}

// listen opens a loopback listener per family of the VIPs.
func (s *Spreader) listen(ctx context.Context) (Listeners, error) {
	var ls Listeners
	for _, v := range s.cfg.VIPs {
		var err error
		switch {
		case v.Is4() && ls.V4 == nil:
			ls.V4, err = ListenLoopback(ctx, false)
		case v.Is6() && ls.V6 == nil:
			ls.V6, err = ListenLoopback(ctx, true)
		}
		if err != nil {
			ls.close()
			return Listeners{}, fmt.Errorf("listening on loopback: %w", err)
		}
	}
	return ls, nil
}

// steer attaches the steering to our own network namespace.
func (s *Spreader) steer(ls Listeners) (*Steer, error) {
	ns, err := os.Open("/proc/self/ns/net")
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	return NewSteer(ns, s.cfg.VIPs, s.cfg.Port, ls, steerLease)
}

// The steering's lease: a process that does not run for steerLease (frozen,
// starved) no longer gets new connections, the local apiserver does, as
// without spreading; renewed every steerRenew, four times a lease, so one
// late renewal loses nothing.
const (
	steerLease = time.Second
	steerRenew = steerLease / 4
)

// renew keeps the steering's lease running until ctx ends.
func (s *Spreader) renew(ctx context.Context, steer *Steer) {
	t := quietio.NewTicker(steerRenew)
	defer t.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		s.gate.Unless(func() {
			if err := steer.Renew(steerLease); err != nil {
				s.log.Warn("Renewing the steering failed: new connections reach the local apiserver alone until it succeeds", "error", err)
			}
		})
	}
}
