package bgp

import (
	"net/netip"
	"time"
)

// Retry waits after a failed route change: retryMin, doubling up to retryMax.
const (
	retryMin = 200 * time.Millisecond
	retryMax = 10 * time.Second
)

// backoff tracks the VIPs whose route change failed and how long to wait
// before the next try. Not safe for concurrent use (the loop's goroutine).
type backoff struct {
	pending map[netip.Prefix]bool
	wait    time.Duration
}

// failed records a failure of vip and returns the wait before the retry.
func (b *backoff) failed(vip netip.Prefix) time.Duration {
	if b.pending == nil {
		b.pending = map[netip.Prefix]bool{}
	}
	b.pending[vip] = true
	b.wait = min(max(2*b.wait, retryMin), retryMax)
	return b.wait
}

// done records a success for vip; the wait starts over once none is pending.
func (b *backoff) done(vip netip.Prefix) {
	delete(b.pending, vip)
	if len(b.pending) == 0 {
		b.wait = 0
	}
}
