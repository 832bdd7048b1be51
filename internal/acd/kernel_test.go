package acd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
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

// TestNeighNews: the kernel's neighbour news: an entry in resolution keeps a
// member's wait and forgets its address; a failed or deleted one ends it; a
// reachable one is the member's address.
func TestNeighNews(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := NewKnown(nil, func() time.Time { return now }, nil)
	news := func(typ uint16, state int, mac net.HardwareAddr) {
		neighNews(k, netlink.NeighUpdate{Type: typ, Neigh: netlink.Neigh{IP: peerA.AsSlice(), State: state, HardwareAddr: mac}})
	}
	k.Heard(peerA, 0)
	news(unix.RTM_NEWNEIGH, unix.NUD_INCOMPLETE, nil)
	if k.Resolving().IsZero() {
		t.Fatal("an entry in resolution ended the wait")
	}
	news(unix.RTM_NEWNEIGH, unix.NUD_REACHABLE, member)
	if !k.Resolving().IsZero() || !k.Ours(member) {
		t.Fatal("a reachable entry must end the wait and make its MAC ours")
	}
	news(unix.RTM_NEWNEIGH, unix.NUD_INCOMPLETE, nil)
	if _, ok := k.neigh[peerA]; ok {
		t.Fatal("an entry in resolution kept the address known before")
	}
	for _, u := range []struct {
		typ   uint16
		state int
	}{{unix.RTM_NEWNEIGH, unix.NUD_FAILED}, {unix.RTM_DELNEIGH, unix.NUD_REACHABLE}} {
		news(unix.RTM_NEWNEIGH, unix.NUD_REACHABLE, member)
		now = now.Add(time.Second)
		news(u.typ, u.state, member)
		k.Heard(peerA, 0)
		if k.Resolving().IsZero() {
			t.Fatalf("type %d state %#x: the entry must be gone (resolved again at the next advertisement)", u.typ, u.state)
		}
		now = now.Add(ResolveGrace / 2)
		news(u.typ, u.state, member) // ends the wait: the next advertisement starts a fresh one
		k.Heard(peerA, 0)
		if got := k.Resolving(); !got.Equal(now.Add(ResolveGrace)) {
			t.Fatalf("type %d state %#x during a wait: resolving until %v, want a fresh %v", u.typ, u.state, got, now.Add(ResolveGrace))
		}
		news(unix.RTM_NEWNEIGH, unix.NUD_REACHABLE, member)
	}
}
