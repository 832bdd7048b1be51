package reconcile

import "net/netip"

// Words is what a pass of the reconcile loop knows of the election's word:
// the VIPs to hold or not, those to announce again, and how many words came
// since the latest pass took them. It takes no lock and starts no
// goroutine: Loop guards it with its mutex; the simulation runs it as it
// is.
type Words struct {
	desired map[netip.Prefix]bool
	again   map[netip.Prefix]bool // re-announce requests
	words   uint64                // the election's words (Set, Hold) so far
	taken   uint64                // words when the latest pass took them
}

// NewWords returns an empty record: nothing desired.
func NewWords() *Words {
	return &Words{desired: map[netip.Prefix]bool{}, again: map[netip.Prefix]bool{}}
}

// Set says whether vip should be held.
func (w *Words) Set(vip netip.Prefix, hold bool) {
	w.desired[vip] = hold
	w.words++
}

// Hold makes vip desired and asks for it to be announced again after the
// next pass if it was held already (a VIP bound by that pass is announced
// as installed).
func (w *Words) Hold(vip netip.Prefix) {
	w.Set(vip, true)
	w.again[vip] = true
}

// Again asks for vip to be announced again if the election's latest word
// is to hold it, and says whether it is; it never makes a VIP wanted.
func (w *Words) Again(vip netip.Addr) bool {
	found := false
	for p, hold := range w.desired {
		if p.Addr() == vip && hold {
			w.again[p], found = true, true
		}
	}
	return found
}

// Held returns the VIPs the election's latest word holds.
func (w *Words) Held() map[netip.Addr]bool {
	held := map[netip.Addr]bool{}
	for p, hold := range w.desired {
		if hold {
			held[p.Addr()] = true
		}
	}
	return held
}

// Wanted says whether the election's latest word on vip is to hold it,
// which may not have reached a pass yet.
func (w *Words) Wanted(vip netip.Addr) bool {
	for p, hold := range w.desired {
		if p.Addr() == vip {
			return hold
		}
	}
	return false
}

// Take is a pass's snapshot: a copy of the desired set, and the
// re-announce requests, which it takes.
func (w *Words) Take() (desired, again map[netip.Prefix]bool) {
	desired = make(map[netip.Prefix]bool, len(w.desired))
	for k, v := range w.desired {
		desired[k] = v
	}
	again, w.again = w.again, map[netip.Prefix]bool{}
	w.taken = w.words
	return desired, again
}

// Return puts back re-announce requests a pass could not carry out (it
// could not read the interface): the next pass asks again.
func (w *Words) Return(again map[netip.Prefix]bool) {
	for vip := range again {
		w.again[vip] = true
	}
}

// Lapsed lets go of vip, whose lifetime ran out: only a new Hold binds it
// again. A word of the election since the pass took its snapshot stands.
func (w *Words) Lapsed(vip netip.Prefix) {
	if w.words == w.taken {
		w.desired[vip] = false
		delete(w.again, vip)
	}
}
