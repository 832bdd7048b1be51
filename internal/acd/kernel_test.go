package acd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Another program's subscription with a dump, in the same network
// namespace, is no failure of ours: its dump request reaches our sockets
// too (vishvananda/netlink#786). Before, each such request ended our
// subscriptions (two daemons of ours in one namespace ended each other's
// every second). Needs root: a network namespace of its own.
func TestWatchKernelOutlivesOthersDumps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace)")
	}
	ns := make(chan netns.NsHandle, 1)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		h, err := netns.New()
		if err != nil {
			t.Error(err)
			close(ns)
			return
		}
		ns <- h
		WatchKernel(ctx, NewKnown(nil, nil, func(netip.Addr) {}), log)
	}()
	h, ok := <-ns
	if !ok {
		cancel()
		return
	}
	defer h.Close()
	// Another subscriber in that namespace dumps, again and again.
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(h); err != nil {
			errs <- err
			return
		}
		for range 20 {
			done := make(chan struct{})
			if err := netlink.NeighSubscribeWithOptions(make(chan netlink.NeighUpdate, 64), done,
				netlink.NeighSubscribeOptions{ListExisting: true}); err != nil {
				errs <- err
				return
			}
			if err := netlink.LinkSubscribeWithOptions(make(chan netlink.LinkUpdate, 64), done,
				netlink.LinkSubscribeOptions{ListExisting: true}); err != nil {
				errs <- err
				return
			}
			time.Sleep(50 * time.Millisecond)
			close(done)
		}
		errs <- nil
	}()
	if err := <-errs; err != nil {
		cancel()
		wg.Wait()
		if errors.Is(err, unix.EOPNOTSUPP) { // qemu-user (make unit-arm64) translates few netlink calls
			t.Skipf("netlink subscriptions unsupported here: %v", err)
		}
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()
	if out := logs.String(); strings.Contains(out, "failed") {
		t.Errorf("the subscription failed on another program's dumps:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
