package bfd

import (
	"testing"
	"time"
)

// TestNotifierOrderAndNoBlocking: changes reach onChange in the order they
// were added, and adding never waits for an onChange that takes time.
func TestNotifierOrderAndNoBlocking(t *testing.T) {
	release := make(chan struct{})
	got := make(chan State, 10)
	n := newNotifier(func(c Change) {
		<-release
		got <- c.State
	})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { n.run(stop); close(done) }()
	want := []State{Init, Up, Down, Init, Up}
	added := make(chan struct{})
	go func() {
		for _, s := range want {
			n.add(Change{State: s})
		}
		close(added)
	}()
	select {
	case <-added:
	case <-time.After(10 * time.Second):
		t.Fatal("add blocked while onChange was busy")
	}
	close(release)
	for i, w := range want {
		if s := <-got; s != w {
			t.Fatalf("change %d: %v, want %v (order %v)", i, s, w, want)
		}
	}
	close(stop)
	<-done
}
