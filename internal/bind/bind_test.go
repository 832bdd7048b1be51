package bind

import "testing"

// TestDecide is the whole table: every combination of the inputs.
func TestDecide(t *testing.T) {
	type out struct{ hold, decided bool }
	for _, c := range []struct {
		in   Inputs
		want out
	}{
		{Inputs{Undecided, Clear, false}, out{false, false}},
		{Inputs{Undecided, Claimed, true}, out{true, false}},
		{Inputs{Undecided, Unprobed, true}, out{true, false}},
		{Inputs{NotElected, Clear, true}, out{false, true}},
		{Inputs{NotElected, Clear, false}, out{false, true}},
		{Inputs{Elected, Claimed, true}, out{false, true}},
		{Inputs{Elected, Claimed, false}, out{false, true}},
		// A VIP kept across a restart, the check still settling: kept
		// (issue 32 finding 2: it was removed and bound again 1.6 s later).
		{Inputs{Elected, Unprobed, true}, out{true, true}},
		{Inputs{Elected, Unprobed, false}, out{false, true}},
		{Inputs{Elected, Clear, false}, out{true, true}},
		{Inputs{Elected, Clear, true}, out{true, true}},
	} {
		hold, decided := Decide(c.in)
		if (out{hold, decided}) != c.want {
			t.Errorf("Decide(%v, %v, bound=%v) = hold %v decided %v, want %+v", c.in.Election, c.in.Check, c.in.Bound, hold, decided, c.want)
		}
	}
}
