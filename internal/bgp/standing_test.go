package bgp

import "testing"

// TestPartStanding: a node announces while healthy; unhealthy, it keeps
// demoted routes with fail open only once it has been healthy since it
// started (a node that never was must not draw traffic), and withdraws
// without fail open.
func TestPartStanding(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failOpen bool
		health   []bool
		want     []Standing
	}{
		{"never healthy, fail open", true, []bool{false, false}, []Standing{Withdrawn, Withdrawn}},
		{"healthy then failing, fail open", true, []bool{true, false, true, false}, []Standing{Announced, Demoted, Announced, Demoted}},
		{"healthy then failing, strict", false, []bool{true, false, true}, []Standing{Announced, Withdrawn, Announced}},
		{"failing, then healthy, then failing, fail open", true, []bool{false, true, false}, []Standing{Withdrawn, Announced, Demoted}},
	} {
		p := NewPart(tc.failOpen)
		for i, ok := range tc.health {
			if got := p.Health(ok); got != tc.want[i] {
				t.Errorf("%s: health %v at step %d: %v, want %v", tc.name, ok, i, got, tc.want[i])
			}
		}
	}
}
