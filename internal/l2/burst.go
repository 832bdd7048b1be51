package l2

import "time"

// RepeatGap is the pause between two announcements of one takeover: longer
// than Linux's ARP locktime (1 s), so a neighbour that just learnt another
// MAC takes ours.
const RepeatGap = 1100 * time.Millisecond

// RetryGap is the pause before retrying an announcement that failed (for
// example while the link-local address is still tentative after link up,
// or while the interface is gone); SendTries is how many tries one
// announcement gets before it counts as sent-and-failed.
const (
	RetryGap  = 200 * time.Millisecond
	SendTries = 5
)

// lateRepeat: a repeat due longer ago than this goes only once the
// election has read what the kernel queued meanwhile (the process did not
// run: frozen, a VM paused, a starved host), and only if its gates still
// open then (Burst.Go). Meanwhile another node may have taken the VIP over,
// and a gratuitous ARP of ours sent before the election reads its
// advertisements would pull the neighbours to a node about to let the VIP
// go.
const lateRepeat = 50 * time.Millisecond

// Burst is the schedule of one VIP's announcements: at once (our own
// address first), then Repeat-1 more Gap apart, then every Refresh if set.
// It has no clock and no goroutine: the node (internal/l2node) drives it with the wall
// clock, the simulation with its own.
type Burst struct {
	sent int       // announcements made
	due  time.Time // when the next is due
}

// NewBurst returns a burst whose first announcement is due at now.
func NewBurst(now time.Time) *Burst { return &Burst{due: now} }

// Gates are what the rest of the node says when an announcement is due.
type Gates struct {
	Wanted  bool // the election's latest word is to hold the VIP (reconcile.Words.Wanted)
	Leading bool // this node is the election's master now
	Fresh   bool // the VIP is bound and its lifetime renewed in time (reconcile.Reconciler.Fresh)
}

// Ask returns the gates of the announcement due, asking each part only as
// far as the answer needs: whether the master leads only for a VIP it
// wants, whether the VIP is fresh only for a repeat of a leading master
// (a takeover's first announcement does not wait for a reconcile pass
// that holds the reconciler).
func (b *Burst) Ask(wanted, leading, fresh func() bool) Gates {
	g := Gates{Wanted: wanted()}
	g.Leading = g.Wanted && leading()
	g.Fresh = g.Leading && !b.Self() && fresh()
	return g
}

// Goes says whether the announcement due now goes out: only a master
// announces a VIP it wants, and a repeat only a VIP still bound in time
// (the first is sent as the pass binds it). A burst that does not go is
// over.
func (b *Burst) Goes(g Gates) bool { return g.Wanted && g.Leading && (b.sent == 0 || g.Fresh) }

// Go says whether the announcement due goes: its gates first (Goes); a
// repeat found late then has the election read what the kernel queued
// (caughtUp: false when it cannot) and asks its gates again: the election
// may have made this node a backup meanwhile (a handover keeps the VIP
// wanted). A burst that does not go is over.
func (b *Burst) Go(now func() time.Time, gates func() Gates, caughtUp func(time.Time) bool) bool {
	if !b.Goes(gates()) {
		return false
	}
	t := now()
	return !b.Late(t) || caughtUp(t) && b.Goes(gates())
}

// Self says whether the announcement due is the burst's first, which
// announces our own address first (a neighbour learns our MAC for it
// before the VIP's).
func (b *Burst) Self() bool { return b.sent == 0 }

// Late says whether the announcement due is a repeat more than lateRepeat
// behind its time at now: it goes only once the election has caught up
// with what the kernel queued meanwhile, and is still the master then.
func (b *Burst) Late(now time.Time) bool { return b.sent > 0 && now.Sub(b.due) > lateRepeat }

// Sent records the announcement made at now and returns when the next is
// due: Gap later while the burst repeats, Refresh later after, or zero when
// the burst is over. repeat and refresh are read at each announcement (a
// reload counts from the next).
func (b *Burst) Sent(now time.Time, repeat int, gap, refresh time.Duration) time.Time {
	b.sent++
	switch {
	case b.sent < repeat:
		b.due = now.Add(gap)
	case refresh > 0:
		b.due = now.Add(refresh)
	default:
		b.due = time.Time{}
	}
	return b.due
}

// Again is an announcement out of a burst's schedule: another router of
// our group announced the VIP (Contest), or this node defends the VIP
// against another host's answer (RFC 5227).
type Again struct{ Contest bool }

// Goes says whether the announcement goes, asked once the election has
// read what the kernel queued: only the master announces a VIP it still
// wants, and it answers another router's announcement only once it has
// been the master for a while (established, vrrp.Established): one that
// just took over may hear the router it replaced, alive after all, and
// the election settles that.
func (a Again) Goes(wanted, leading, established bool) bool {
	return wanted && leading && (!a.Contest || established)
}
