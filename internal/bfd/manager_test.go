package bfd

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestShutdownBeforeStart: a Manager closes without its timer, which only
// Start makes (NewManager's failures close the same way).
func TestShutdownBeforeStart(t *testing.T) {
	none, err := NewManager(fast, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	one, _ := handler(t, up(t, fast))
	one.stop = make(chan struct{})
	for _, c := range []struct {
		name string
		m    *Manager
	}{{"no session", none}, {"one session", one}} {
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			c.m.Shutdown()
		}()
		select {
		case p := <-done:
			if p != nil {
				t.Errorf("%s: Shutdown before Start panicked: %v", c.name, p)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: Shutdown before Start did not return", c.name)
		}
	}
}
