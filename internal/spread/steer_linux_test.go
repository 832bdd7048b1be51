package spread

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread of its own in a new network namespace whose
// lo is up with addrs; f gets the namespace's file.
func inNetns(t *testing.T, addrs []string, f func(ns *os.File)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (a network namespace, an sk_lookup program)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		h, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer h.Close()
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		for _, a := range addrs {
			if err == nil {
				var addr *netlink.Addr
				if addr, err = netlink.ParseAddr(a); err == nil {
					addr.Flags |= 0x200 // IFA_F_NODAD
					err = netlink.AddrAdd(lo, addr)
				}
			}
		}
		if err != nil {
			t.Error(err)
			return
		}
		for _, a := range addrs { // the kernel adds an IPv6 address's route a moment later, from a work queue
			if err := routed(strings.Split(a, "/")[0]); err != nil {
				t.Error(err)
				return
			}
		}
		ns, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		f(ns)
	}()
	<-done
}

// routed waits until a datagram socket can be connected to addr.
func routed(addr string) error {
	var err error
	for range 200 {
		var c net.Conn
		if c, err = net.Dial("udp", net.JoinHostPort(addr, "9")); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

// serveName answers every connection on l with name.
func serveName(l net.Listener, name string) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, name, c.LocalAddr())
			c.Close()
		}
	}()
}

func who(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	b, _ := io.ReadAll(c)
	return strings.TrimSpace(string(b))
}

// The apiserver listens on the wildcard address; while the program is
// attached, connections to the VIPs on its port reach our listeners with
// the VIP as their local address, everything else the apiserver; closed,
// the apiserver gets the VIPs again.
func TestSteerHandsTheVIPsPortToUs(t *testing.T) {
	inNetns(t, []string{"192.0.2.100/32", "192.0.2.7/32", "2001:db8::100/128"}, func(ns *os.File) {
		ctx := context.Background()
		ls := map[string]net.Listener{}
		for name, listen := range map[string]func() (net.Listener, error){
			"apiserver": func() (net.Listener, error) { return net.Listen("tcp", ":16443") },
			"other":     func() (net.Listener, error) { return net.Listen("tcp", ":16444") },
			"us4":       func() (net.Listener, error) { return ListenLoopback(ctx, false) },
			"us6":       func() (net.Listener, error) { return ListenLoopback(ctx, true) },
		} {
			l, err := listen()
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Close()
			serveName(l, name)
			ls[name] = l
		}
		v4, v6 := ls["us4"].(*net.TCPListener), ls["us6"].(*net.TCPListener)
		vips := []netip.Addr{netip.MustParseAddr("192.0.2.100"), netip.MustParseAddr("2001:db8::100")}
		s, err := NewSteer(ns, vips, 16443, Listeners{V4: v4, V6: v6}, time.Hour)
		if err != nil {
			t.Error(err)
			return
		}
		for addr, want := range map[string]string{
			"192.0.2.100:16443":     "us4 192.0.2.100:16443",
			"[2001:db8::100]:16443": "us6 [2001:db8::100]:16443",
			"192.0.2.7:16443":       "apiserver 192.0.2.7:16443",
			"127.0.0.1:16443":       "apiserver 127.0.0.1:16443",
			"192.0.2.100:16444":     "other 192.0.2.100:16444",
		} {
			if got := who(t, addr); got != want {
				t.Errorf("%s answered by %q, want %q", addr, got, want)
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		for addr, want := range map[string]string{
			"192.0.2.100:16443":     "apiserver 192.0.2.100:16443",
			"[2001:db8::100]:16443": "apiserver [2001:db8::100]:16443",
		} {
			if got := who(t, addr); got != want {
				t.Errorf("after Close, %s answered by %q, want %q", addr, got, want)
			}
		}
	})
}

// apiserverAndUs starts, in the namespace the caller is in, an apiserver
// answering its name on every address's port 16443 and our loopback
// listener; both close when the test ends.
func apiserverAndUs(t *testing.T) (*net.TCPListener, bool) {
	apiserver, err := net.Listen("tcp", ":16443")
	if err != nil {
		t.Error(err)
		return nil, false
	}
	t.Cleanup(func() { apiserver.Close() })
	serveName(apiserver, "apiserver")
	v4, err := ListenLoopback(context.Background(), false)
	if err != nil {
		t.Error(err)
		return nil, false
	}
	t.Cleanup(func() { v4.Close() })
	return v4, true
}

// With our listener closed (a proxy stopping before the program is
// detached) the apiserver answers: the program passes what it cannot
// assign.
func TestSteerPassesWithoutAListener(t *testing.T) {
	inNetns(t, []string{"192.0.2.100/32"}, func(ns *os.File) {
		v4, ok := apiserverAndUs(t)
		if !ok {
			return
		}
		s, err := NewSteer(ns, []netip.Addr{netip.MustParseAddr("192.0.2.100")}, 16443, Listeners{V4: v4}, time.Hour)
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		v4.Close()
		if got := who(t, "192.0.2.100:16443"); got != "apiserver 192.0.2.100:16443" {
			t.Errorf("answered by %q, want the apiserver", got)
		}
	})
}

// A process that stops renewing the lease (frozen, starved) stops getting
// new connections once it ran out: the apiserver answers the VIP, as
// without spreading; renewed, they come to us again.
func TestSteerLapses(t *testing.T) {
	inNetns(t, []string{"192.0.2.100/32"}, func(ns *os.File) {
		v4, ok := apiserverAndUs(t)
		if !ok {
			return
		}
		serveName(v4, "us4")
		s, err := NewSteer(ns, []netip.Addr{netip.MustParseAddr("192.0.2.100")}, 16443, Listeners{V4: v4}, 200*time.Millisecond)
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		for _, step := range []struct {
			after time.Duration
			renew time.Duration
			want  string
		}{
			{0, 0, "us4 192.0.2.100:16443"},
			{300 * time.Millisecond, 0, "apiserver 192.0.2.100:16443"},
			{0, time.Hour, "us4 192.0.2.100:16443"},
		} {
			time.Sleep(step.after)
			if step.renew > 0 {
				if err := s.Renew(step.renew); err != nil {
					t.Error(err)
				}
			}
			if got := who(t, "192.0.2.100:16443"); got != step.want {
				t.Errorf("after %v (renewed for %v): answered by %q, want %q", step.after, step.renew, got, step.want)
			}
		}
	})
}

// A failure half way (here the attach: not a network namespace) returns
// the error and frees what was made: no panic, nothing attached.
func TestSteerFailsCleanly(t *testing.T) {
	inNetns(t, nil, func(ns *os.File) {
		v4, err := ListenLoopback(context.Background(), false)
		if err != nil {
			t.Error(err)
			return
		}
		defer v4.Close()
		notNS, err := os.Open(os.DevNull)
		if err != nil {
			t.Error(err)
			return
		}
		defer notNS.Close()
		s, err := NewSteer(notNS, []netip.Addr{netip.MustParseAddr("192.0.2.100")}, 16443, Listeners{V4: v4}, time.Hour)
		if err == nil || s != nil {
			t.Errorf("NewSteer on %s: %v, %v; want an error and no Steer", os.DevNull, s, err)
		}
	})
}
