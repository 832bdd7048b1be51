// Command gobgpbfd is a BGP speaker built only for the benchmarks: GoBGP v4
// with GoBGP's own BFD enabled on its one neighbour, announcing one VIP. It
// is the "GoBGP BFD" column next to novaedge-cpvip's BFD and FRR's bfdd.
// It runs until SIGTERM or SIGINT and says "established" on stderr.
//
//	gobgpbfd -as 65004 -router-id 198.51.100.22 -peer 198.51.100.1 -peer-as 65001 \
//	  -vip 192.0.2.102/32 -interval 50ms -mult 3
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	api "github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	bgpfsm "github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/novaedge/cpvip/internal/bgp"
)

func main() {
	as := flag.Uint("as", 65004, "local AS")
	routerID := flag.String("router-id", "", "router ID (IPv4)")
	peer := flag.String("peer", "", "neighbour address")
	peerAS := flag.Uint("peer-as", 65001, "neighbour AS")
	vip := flag.String("vip", "", "VIP to announce, like 192.0.2.102/32")
	interval := flag.Duration("interval", 50*time.Millisecond, "BFD transmit and receive interval")
	mult := flag.Uint("mult", 3, "BFD detection multiplier")
	flag.Parse()
	if err := run(uint32(*as), *routerID, *peer, uint32(*peerAS), *vip, *interval, uint32(*mult)); err != nil {
		fmt.Fprintln(os.Stderr, "gobgpbfd:", err)
		os.Exit(1)
	}
}

func run(as uint32, routerID, peer string, peerAS uint32, vip string, interval time.Duration, mult uint32) error {
	prefix, err := netip.ParsePrefix(vip)
	if err != nil {
		return fmt.Errorf("-vip: %w", err)
	}
	if _, err := netip.ParseAddr(peer); err != nil {
		return fmt.Errorf("-peer: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := server.NewBgpServer(server.LoggerOption(log, new(slog.LevelVar)))
	go s.Serve()
	defer s.Stop()
	if err := s.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: as, RouterId: routerID, ListenPort: -1}}); err != nil {
		return err
	}
	us := uint32(interval / time.Microsecond)
	conf := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: peer, PeerAsn: peerAS},
		Timers: &api.Timers{Config: &api.TimersConfig{HoldTime: 9, KeepaliveInterval: 3,
			ConnectRetry: 1, IdleHoldTimeAfterReset: 1}},
		AfiSafis: []*api.AfiSafi{{Config: &api.AfiSafiConfig{
			Family: &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}, Enabled: true}}},
		Bfd: &api.BfdPeerConfig{Enabled: true, DesiredMinimumTxInterval: us, RequiredMinimumReceive: us, DetectionMultiplier: mult},
	}
	// A dropped session is re-added at once (GoBGP would idle 5 s), like
	// novaedge-cpvip does, so the benchmark's rounds do not wait for it; the
	// benchmark measures the router's detection, not the recovery.
	readd := func() {
		_ = s.DeletePeer(ctx, &api.DeletePeerRequest{Address: peer})
		_ = s.AddPeer(ctx, &api.AddPeerRequest{Peer: conf})
	}
	established := false
	err = s.WatchEvent(ctx, server.WatchEventMessageCallbacks{OnPeerUpdate: func(ev *apiutil.WatchEventMessage_PeerEvent, _ time.Time) {
		if ev.Type != apiutil.PEER_EVENT_STATE {
			return
		}
		fmt.Fprintf(os.Stderr, "peer %s %s\n", peer, ev.Peer.State.SessionState)
		up := ev.Peer.State.SessionState == bgpfsm.BGP_FSM_ESTABLISHED
		if established && !up {
			go readd()
		}
		established = up
	}}, server.WatchPeer())
	if err != nil {
		return err
	}
	if err := s.AddPeer(ctx, &api.AddPeerRequest{Peer: conf}); err != nil {
		return err
	}
	path, err := bgp.HostRoute(prefix, netip.Addr{}, nil, false)
	if err != nil {
		return err
	}
	if _, err := s.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{path}}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
