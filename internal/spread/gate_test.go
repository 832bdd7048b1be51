package spread

import (
	"slices"
	"testing"
)

// Past either cap the steering pauses; it resumes once both counts are
// under 90 % of their caps, not at the first connection that ends.
func TestGatePausesAtACap(t *testing.T) {
	var flips []bool
	var greeting, carried int
	g := &Gate{Pause: func(p bool, gr, c int) { flips, greeting, carried = append(flips, p), gr, c }, maxGreet: 10, maxCarry: 20}
	for range 9 {
		g.Enter()
	}
	if len(flips) > 0 {
		t.Fatalf("paused under the cap: %v", flips)
	}
	g.Enter() // 10 awaiting an answer
	if !slices.Equal(flips, []bool{true}) || greeting != 10 {
		t.Fatalf("at the greeting cap: %v", flips)
	}
	g.Greeted() // 9: not under 90 % of 10 yet
	if len(flips) != 1 {
		t.Fatalf("resumed at 9 of 10: %v", flips)
	}
	g.Greeted() // 8
	if !slices.Equal(flips, []bool{true, false}) {
		t.Fatalf("under 90 %%: %v", flips)
	}
	for range 8 {
		g.Greeted()
	}
	for range 10 { // 20 carried, none awaiting an answer
		g.Enter()
		g.Greeted()
	}
	if !slices.Equal(flips, []bool{true, false, true}) {
		t.Fatalf("at the carried cap: %v", flips)
	}
	ran := false
	g.Unless(func() { ran = true })
	if ran {
		t.Error("a renewal ran while paused")
	}
	for range 3 {
		g.Leave(false)
	}
	if !slices.Equal(flips, []bool{true, false, true, false}) {
		t.Fatalf("17 of 20 carried: %v", flips)
	}
	if greeting != 0 || carried != 17 {
		t.Fatalf("counts at the resume %d %d, want 0 17", greeting, carried)
	}
}
