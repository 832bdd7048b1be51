package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/novaedge/cpvip/internal/acd"
	"github.com/novaedge/cpvip/internal/agent"
	"github.com/novaedge/cpvip/internal/bfd"
	"github.com/novaedge/cpvip/internal/bgp"
	"github.com/novaedge/cpvip/internal/config"
	"github.com/novaedge/cpvip/internal/etcdwatch"
	"github.com/novaedge/cpvip/internal/health"
	"github.com/novaedge/cpvip/internal/ifaddr"
	"github.com/novaedge/cpvip/internal/l2"
	"github.com/novaedge/cpvip/internal/l2node"
	"github.com/novaedge/cpvip/internal/memtrim"
	"github.com/novaedge/cpvip/internal/reconcile"
	"github.com/novaedge/cpvip/internal/status"
	"github.com/novaedge/cpvip/internal/vrrp"
)

func run(args []string, stderr io.Writer) int {
	// SIGHUP is ours from the start: Go's default would kill the daemon
	// without a handover, leaving the VIP bound.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, fl, warnings, code := loadRunConfig(args, stderr)
	if cfg == nil {
		return code
	}
	reloader := config.NewReloader(fl)
	oneProc(cfg.Spread)
	log, level := newLogger(cfg, stderr)
	for _, w := range warnings {
		log.Warn("Configuration warning", "warning", w)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stopper := newStopper(stop, log)
	build := buildL2
	if cfg.Mode == config.ModeBGP {
		build = buildBGP
	}
	d, err := build(ctx, cfg, log)
	var invalid *config.Error
	switch {
	case err != nil && ctx.Err() != nil:
		log.Info("Stopped before start-up completed: nothing was bound")
		return exitOK
	case errors.As(err, &invalid):
		log.Error("Invalid configuration", "error", err)
		return exitConfig
	case err != nil:
		log.Error("Cannot start", "error", err)
		return exitFail
	}
	if d.spread == nil {
		keptConnections(false, log.With("component", "spread")) // a previous run's, if it spread
	}
	d.cfg, d.started, d.journal = cfg, time.Now(), status.NewJournal(time.Now)
	d.agent.Journal = d.journal
	var observe []func(health.Result)
	if d.spread != nil {
		observe = append(observe, d.spread.LocalResult)
	}
	if cfg.MetricsAddr != "" {
		m := status.NewMetrics(d.snapshot, d.journal)
		observe = append(observe, func(r health.Result) { m.ObserveCheck(r.Duration) })
		status.Serve(ctx, cfg.MetricsAddr, status.Handler(m, d.snapshot), log)
	}
	d.checker.OnResult = func(r health.Result) {
		for _, f := range observe {
			f(r)
		}
	}
	go reloadOn(ctx, hup, reloader, cfg, d.live(level),
		&d.reloads, log.With("component", "reload"))
	log.Info("Starting control-plane VIP manager", "vip", cfg.VIPAddress.String(), "mode", cfg.Mode, "version", version)
	// Spreading ends after the agent's handover: its connections would
	// otherwise be cut while the VIP is still here, and again when it moves.
	spreadCtx, stopSpread := context.WithCancel(context.Background())
	defer stopSpread()
	spreadDone := make(chan struct{})
	if d.spread != nil {
		go func() { d.spread.Run(spreadCtx); close(spreadDone) }()
	} else {
		close(spreadDone)
	}
	if cfg.Mode == config.ModeL2 && l2.BackupsWait(cfg.AdvertInterval, cfg.RestartWait, cfg.ConflictCheck) {
		stopper.restart.Store(&restartInPlace{same: sameGroup(cfg, reloader), detach: func() {
			if d.spread != nil {
				d.spread.Detach()
				stopSpread()
				<-spreadDone
			}
		}})
	}
	d.ready.Store(true)
	trim(log)
	go trimLater(ctx, log)
	d.agent.Run(ctx)
	stopSpread()
	<-spreadDone
	return exitOK
}

// trimSettle is when the executable's pages are dropped again after start,
// once BGP sessions are up and the first election is over; trimPeriod how
// often after that.
const (
	trimSettle = 30 * time.Second
	trimPeriod = 10 * time.Minute
)

// trim drops the executable's read-only pages from the resident set; the
// ones in use fault back in (internal/memtrim).
func trim(log *slog.Logger) {
	if n, err := memtrim.Executable(); err != nil {
		log.Debug("Trimming the executable's pages failed", "error", err)
	} else {
		log.Debug("Pages of the executable dropped from the resident set", "bytes", n)
	}
}

// trimLater trims again once start-up has settled and then every
// trimPeriod: code that ran for a while only (start-up, BGP session
// set-up, a takeover) leaves the resident set. BGP + BFD, idle: 30.7 MiB
// before, 22.5 MiB after.
func trimLater(ctx context.Context, log *slog.Logger) {
	t := time.NewTimer(trimSettle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		trim(log)
		t.Reset(trimPeriod)
	}
}

// oneProc runs the daemon's goroutines on one P unless GOMAXPROCS is set
// or it spreads API connections. Its work is microseconds per event; with
// a second P every goroutine made runnable also wakes a second thread to
// look for work, which finds none and sleeps again: with BGP and BFD at
// 50 ms, 43 % of the idle daemon's wake-ups (540 a second against 310, side
// by side). Spreading carries the cluster's API connections (their
// greetings and goroutines), which must not queue the advertisements
// behind them: the runtime's default then.
func oneProc(spread bool) {
	if os.Getenv("GOMAXPROCS") == "" && !spread {
		runtime.GOMAXPROCS(1)
	}
}

func newChecker(cfg *config.Config, log *slog.Logger) (*health.Checker, error) {
	var stalls health.StallJudge // only this node's etcd tells this node's apiserver's stalls
	if len(cfg.HealthEtcdPorts) > 0 {
		w := etcdwatch.New(cfg.HealthEtcdPorts)
		if err := w.Check(); err != nil {
			log.Warn("Cannot read the TCP socket table: a stalled check whose ping answers counts as hung whatever etcd does",
				"error", err.Error())
		}
		stalls = w
	}
	return newCheckerOf(cfg, cfg.APIServerURL(), cfg.APIServerReadyURL(), stalls, log.With("component", "health"))
}

// newCheckerOf checks the apiserver at url (and readyURL) with the node's
// health settings; stalls, if not nil, judges its stalls.
func newCheckerOf(cfg *config.Config, url, readyURL string, stalls health.StallJudge, log *slog.Logger) (*health.Checker, error) {
	c, err := health.New(health.Config{
		URL: url, ReadyURL: readyURL, Stalls: stalls,
		Interval: cfg.HealthInterval, FastInterval: cfg.HealthFastInterval, Timeout: cfg.HealthTimeout,
		FailThreshold: cfg.FailThreshold, RiseThreshold: cfg.RiseThreshold, HungAfter: cfg.HealthHungAfter,
		TokenPath: cfg.SATokenPath, CAFiles: cfg.CAFiles(), ServerName: cfg.TLSServerName,
		InsecureSkipVerify: cfg.InsecureSkipTLSVerify,
	}, log, time.Now)
	if err != nil {
		return nil, fmt.Errorf("health check: %w", err)
	}
	return c, nil
}

// newReconciler returns the reconciler of the VIPs on ifname.
func newReconciler(cfg *config.Config, ifname string) (*reconcile.Reconciler, error) {
	link, err := ifaddr.NewLink(ifname)
	if err != nil {
		return nil, err
	}
	return reconcile.New(link, cfg.VIPAddress), nil
}

// watchInterface starts the netlink watcher of ifname and returns its
// events; onLink (if any) is called on every change of the link itself.
func watchInterface(ctx context.Context, ifname string, onLink func(), log *slog.Logger) <-chan reconcile.Event {
	events := make(chan reconcile.Event, 8)
	go ifaddr.Watch(ctx, ifname, events, onLink, log.With("component", "netlink"))
	return events
}

// buildL2 wires health and the L2 node (l2node.Node: the election, the
// conflict check, the bind decision and the announcements in one
// goroutine) to the sockets and netlink.
func buildL2(ctx context.Context, cfg *config.Config, log *slog.Logger) (*daemon, error) {
	checker, err := newChecker(cfg, log)
	if err != nil {
		return nil, err
	}
	ifname, err := l2Interface(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	rec, err := newReconciler(cfg, ifname)
	if err != nil {
		return nil, err
	}
	rec.SetLifetime(l2node.Lifetime(cfg), time.Now)
	resume, err := rec.Resume(cfg.ConflictCheck)
	if err != nil {
		return nil, fmt.Errorf("listing the addresses of %s: %w", ifname, err)
	}
	var known *acd.Known // who we are, for the conflict check; nil without it
	var guard *acd.Guard
	if cfg.ConflictCheck {
		known = acd.NewKnown(cfg.Peers, time.Now, func(ip netip.Addr) { acd.Resolve(ifname, ip) })
		guard = newGuard(cfg, ifname, known, log)
	}
	inst, err := buildVRRP(cfg, ifname, resume, guard, known, log)
	if err != nil {
		return nil, err
	}
	link := make(chan struct{}, 1)
	onLink := func() {
		select {
		case link <- struct{}{}:
		default:
		}
	}
	events := watchInterface(ctx, ifname, onLink, log)
	node := l2node.New(l2node.Parts{Config: cfg, Interface: ifname, Inst: inst, Rec: rec, Guard: guard, Known: known,
		Announce: func(addr netip.Addr) error { return l2.Send(ifname, addr) }, Log: log, Kernel: events, Link: link}, time.Now())
	if guard != nil { // started by the node: its readers' first claims count from then on
		go acd.WatchKernel(ctx, known, log.With("component", "acd"))
		go guard.Listen(ctx)
	}
	elector := vrrp.NewElector(inst)
	d := &daemon{agent: &agent.Agent{Health: checker, Elector: node, Log: log},
		checker: checker, rec: rec, ifname: ifname, vrrp: elector, l2: node, guard: guard}
	if d.spread = newSpreader(cfg, log); d.spread != nil {
		d.agent.Local = d.spread
	}
	return d, nil
}

// newGuard builds the address conflict detection of the VIPs on ifname:
// whoever answers for them and is neither this host nor a router of our
// VRRP group (known) keeps them unbound.
func newGuard(cfg *config.Config, ifname string, known *acd.Known, log *slog.Logger) *acd.Guard {
	vips := make([]netip.Addr, len(cfg.VIPAddress))
	for i, v := range cfg.VIPAddress {
		vips[i] = v.Addr()
	}
	open := func(vip netip.Addr) (acd.Wire, error) {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return nil, err
		}
		if vip.Is4() {
			return acd.OpenARP(ifi, vip)
		}
		return acd.OpenNDP(ifi, vip)
	}
	g := acd.NewGuard(vips, open, known, time.Now,
		log.With("component", "acd", "interface", ifname))
	l2node.Guard(g, cfg)
	return g
}

// buildVRRP opens one VRRP transport per VIP (one per address family) and
// makes one election over them, so one node holds every VIP
// (l2node.Instance: with the conflict check, guard and known).
func buildVRRP(cfg *config.Config, ifname string, resume bool, guard *acd.Guard, known *acd.Known, log *slog.Logger) (*vrrp.Instance, error) {
	vips := make([]netip.Addr, len(cfg.VIPAddress))
	for i, v := range cfg.VIPAddress {
		vips[i] = v.Addr()
	}
	conns := make([]vrrp.Transport, 0, len(cfg.VIPAddress))
	for _, vip := range cfg.VIPAddress {
		v6 := vip.Addr().Is6()
		conn, err := vrrp.Listen(ifname, v6, cfg.PeersOf(v6), vips)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, conn)
	}
	return l2node.Instance(cfg, resume, guard, known, conns, log.With("component", "vrrp", "vip", cfg.VIPAddress)), nil
}

// buildBGP wires health, "hold while healthy" and the BGP announcer: the
// VIP on lo (or the configured interface) plus its route.
func buildBGP(ctx context.Context, cfg *config.Config, log *slog.Logger) (*daemon, error) {
	checker, err := newChecker(cfg, log)
	if err != nil {
		return nil, err
	}
	ifname := cfg.Interface
	if ifname == "" {
		ifname = "lo"
	}
	if err := hostInterface(ctx, ifname, log); err != nil {
		return nil, err
	}
	peers := make([]bgp.Peer, 0, len(cfg.BGPPeerList()))
	for _, p := range cfg.BGPPeerList() {
		peers = append(peers, bgp.Peer{Address: p.Address, AS: p.AS, Password: p.Password, Multihop: uint8(p.Multihop)})
	}
	if err := setIPv6NextHops(ctx, cfg, peers, log); err != nil {
		return nil, err
	}
	communities := make([]uint32, len(cfg.BGPCommunities))
	for i, c := range cfg.BGPCommunities {
		communities[i] = c.Uint32()
	}
	speaker := bgp.New(bgp.Config{
		LocalAS: cfg.BGPLocalAS, RouterID: cfg.BGPRouterID, Peers: peers, Password: cfg.BGPPassword,
		HoldTime: cfg.BGPHoldTime, Multihop: uint8(cfg.BGPMultihop), NextHop: cfg.BGPNextHop, Communities: communities,
	}, log.With("component", "bgp"))
	if err := speaker.Start(ctx); err != nil {
		return nil, err
	}
	d := &daemon{checker: checker, ifname: ifname, speaker: speaker}
	var routes bgp.Routes = speaker
	if cfg.BFDEnabled {
		if d.bfd, err = startBFD(cfg, peers, speaker, log); err != nil {
			return nil, err
		}
		routes = bfdFirst{Speaker: speaker, bfd: d.bfd}
	}
	if d.rec, err = newReconciler(cfg, ifname); err != nil {
		return nil, err
	}
	events := watchInterface(ctx, ifname, nil, log)
	ann := bgp.NewAnnouncer(routes, d.rec, events, reconcile.Period, log.With("component", "bgp", "interface", ifname))
	d.bgpElector, d.bgpAnn = bgp.NewElector(cfg.VIPAddress, ann, cfg.FailOpen, log), ann
	d.agent = &agent.Agent{Health: checker, Elector: d.bgpElector, Announcer: ann, Log: log}
	return d, nil
}

// startBFD runs one BFD session per BGP peer; a session going Down resets
// that BGP session at once.
func startBFD(cfg *config.Config, peers []bgp.Peer, speaker *bgp.Speaker, log *slog.Logger) (*bfd.Manager, error) {
	addrs := make([]netip.Addr, len(peers))
	for i, p := range peers {
		addrs[i] = p.Address
	}
	var key *bfd.Key
	if cfg.BFDAuth != config.BFDAuthNone {
		key = &bfd.Key{Type: bfdAuthType(cfg.BFDAuth), ID: 1, Secret: []byte(cfg.BFDAuthKey)}
	}
	mgr, err := bfd.NewManager(bfd.Config{DesiredMinTx: cfg.BFDTxInterval, RequiredMinRx: cfg.BFDRxInterval,
		DetectMult: uint8(cfg.BFDDetectMult), Key: key}, addrs, func(c bfd.Change) {
		if c.Prev == bfd.Up && c.State == bfd.Down {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := speaker.ResetPeer(ctx, c.Peer, "BFD session down"); err != nil {
				log.Warn("Resetting BGP session after BFD down failed", "peer", c.Peer, "error", err)
			}
		}
	}, log.With("component", "bfd"))
	if err != nil {
		return nil, err
	}
	mgr.Start()
	return mgr, nil
}

func bfdAuthType(a config.BFDAuth) bfd.AuthType {
	switch a {
	case config.BFDAuthSimple:
		return bfd.AuthSimple
	case config.BFDAuthKeyedSHA1:
		return bfd.AuthKeyedSHA1
	case config.BFDAuthMeticulousSHA1:
		return bfd.AuthMeticulousSHA1
	}
	return bfd.AuthNone
}

// bfdFirst takes the BFD sessions AdminDown before GoBGP stops, so routers
// drop our routes at once (spec section 7).
type bfdFirst struct {
	*bgp.Speaker
	bfd *bfd.Manager
}

// Stop implements bgp.Routes.
func (b bfdFirst) Stop() {
	b.bfd.Shutdown()
	b.Speaker.Stop()
}
