package l2

import (
	"slices"
	"testing"
	"time"
)

// TestAskAsksOnlyAsFarAsNeeded: the election is asked only for a VIP the
// loop wants, and freshness only for a repeat of a leading master — a
// takeover's first announcement waits for no reconcile pass.
func TestAskAsksOnlyAsFarAsNeeded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var asked []string
	ask := func(name string, v bool) func() bool {
		return func() bool { asked = append(asked, name); return v }
	}
	b := NewBurst(t0)
	if g := b.Ask(ask("wanted", false), ask("leading", true), ask("fresh", true)); g != (Gates{}) || !slices.Equal(asked, []string{"wanted"}) {
		t.Fatalf("not wanted: %+v, asked %v", g, asked)
	}
	asked = nil
	if g := b.Ask(ask("wanted", true), ask("leading", true), ask("fresh", false)); g != (Gates{Wanted: true, Leading: true}) || !slices.Equal(asked, []string{"wanted", "leading"}) {
		t.Fatalf("the first: %+v, asked %v", g, asked)
	}
	b.Sent(t0, 3, RepeatGap, 0)
	asked = nil
	if g := b.Ask(ask("wanted", true), ask("leading", true), ask("fresh", true)); g != (Gates{Wanted: true, Leading: true, Fresh: true}) || !slices.Equal(asked, []string{"wanted", "leading", "fresh"}) {
		t.Fatalf("a repeat: %+v, asked %v", g, asked)
	}
}
