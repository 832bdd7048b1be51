package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	api "github.com/osrg/gobgp/v4/api"
)

// reconnectEvery is how often at most a peer's dropped session is
// reconnected at once; more drops keep GoBGP's 5 s idle hold, so a peer
// that keeps ending sessions is not hammered.
const reconnectEvery = 5 * time.Second

// droppedByPeer tells whether a session that went down for reason, sinceLast
// after this peer was last reconnected, should be reconnected at once: the
// other side ended it (not a notification we sent: our resets already
// reconnect) and we have not just done so.
func droppedByPeer(reason string, sinceLast time.Duration) bool {
	return sinceLast >= reconnectEvery && !strings.HasPrefix(reason, "notification-sent")
}

// reconnect replaces the peer at addr with a fresh one of the same
// configuration: an established session ends with a Cease (peer
// de-configured) and the new peer starts connecting at once. It is how we
// reset a session, rather than GoBGP's ResetPeer: that one, called just as
// the session drops on its own (the router's BFD saw the failure first),
// keeps its notification and ends the next session the moment it comes up.
// And GoBGP holds a peer whose session dropped without our reset in Idle for
// a fixed 5 s; a new peer does not wait, so the route is back about a
// connect-retry after the router (restarted, or its BFD up again) is ready.
func (sp *Speaker) reconnect(ctx context.Context, addr netip.Addr) error {
	var peer *Peer
	for i := range sp.cfg.Peers {
		if sp.cfg.Peers[i].Address == addr {
			peer = &sp.cfg.Peers[i]
		}
	}
	sp.mu.Lock()
	stopped := sp.stopped
	sp.reconnected[addr] = time.Now()
	sp.mu.Unlock()
	if peer == nil || stopped {
		return nil
	}
	err := sp.s.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()})
	if err == nil {
		err = sp.s.AddPeer(ctx, &api.AddPeerRequest{Peer: sp.apiPeer(*peer)})
	}
	if err != nil && !sp.isStopped() { // stopping makes both fail; nothing to report
		return fmt.Errorf("reconnecting BGP peer %s: %w", addr, err)
	}
	return nil
}

// reconnectAfterDrop reconnects a peer whose session the other side ended.
func (sp *Speaker) reconnectAfterDrop(addr netip.Addr) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sp.reconnect(ctx, addr); err != nil {
		sp.log.Warn("BGP peer reconnect failed", "peer", addr, "err", err)
		return
	}
	sp.log.Debug("BGP peer reconnecting at once after the session dropped", "peer", addr)
}

func (sp *Speaker) isStopped() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.stopped
}
