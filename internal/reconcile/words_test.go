package reconcile

import (
	"net/netip"
	"testing"
)

// TestWordsLapsedKeepsANewerWord: a VIP whose lifetime ran out is let go,
// unless the election spoke after the pass took its snapshot (its Hold,
// read after the freeze, stands).
func TestWordsLapsedKeepsANewerWord(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	w := NewWords()
	w.Hold(vip)
	w.Take()
	w.Lapsed(vip)
	if w.Wanted(vip.Addr()) {
		t.Fatal("lapsed with no word since: still wanted")
	}
	w.Hold(vip)
	w.Take()
	w.Hold(vip) // the election, caught up, holds it again
	w.Lapsed(vip)
	if !w.Wanted(vip.Addr()) {
		t.Fatal("lapsed after a newer Hold: the Hold was lost")
	}
	if _, again := w.Take(); !again[vip] {
		t.Fatal("the newer Hold's announcement was lost")
	}
}

// TestWordsAgainOnlyWhenWanted: a re-announcement is asked only for a VIP
// the election holds; a failed pass returns its requests to the next.
func TestWordsAgainOnlyWhenWanted(t *testing.T) {
	vip := netip.MustParsePrefix("192.0.2.100/32")
	w := NewWords()
	if w.Again(vip.Addr()) {
		t.Fatal("again for a VIP never wanted")
	}
	w.Set(vip, true)
	if !w.Again(vip.Addr()) {
		t.Fatal("no again for a held VIP")
	}
	_, again := w.Take()
	w.Return(again)
	if _, again := w.Take(); !again[vip] {
		t.Fatal("a returned request was lost")
	}
	if _, again := w.Take(); len(again) != 0 {
		t.Fatalf("requests taken twice: %v", again)
	}
}
