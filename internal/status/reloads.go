package status

import "sync/atomic"

// Reloads counts the reloads asked (SIGHUP, `systemctl reload`) by result.
type Reloads struct{ ok, refused atomic.Uint64 }

// Applied counts a reload whose file was valid: applied, perhaps partly
// (what needs a restart is logged and left as it was).
func (r *Reloads) Applied() { r.ok.Add(1) }

// Refused counts a reload whose file was invalid or missing: the running
// configuration was kept.
func (r *Reloads) Refused() { r.refused.Add(1) }

// Counts returns the reloads by result: ok and refused.
func (r *Reloads) Counts() map[string]uint64 {
	return map[string]uint64{"ok": r.ok.Load(), "refused": r.refused.Load()}
}
