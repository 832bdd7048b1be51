package acd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/novaedge/cpvip/internal/bind"
	"github.com/novaedge/cpvip/internal/testing/scenario"
)

// TestGuardScripts runs the scripted scenarios in testdata/guard: events
// into one Guard for 192.0.2.100 on a manual clock, what it does (the
// probes it sends, its notes, what it logs at Info and above, the
// resolutions its identity asks of the kernel) and the state after each.
// The script plays the rest of the node: a Run loop (a round at once when
// the guard is woken, and when the round before said), the reconcile step
// (Tell, Verdict and bind.Decide at each Changed note and at each word of
// the election) and the kernel (its neighbour table, which feeds a Known).
// Regenerate the expected output with -rewrite.
//
//	guard [settle=D] [defendwait=D]  a guard, started at 0s; its first round runs
//	at D                             the clock, from the start (0s); the rounds due meanwhile run
//	elect | resign                   the election's word; the reconcile step runs
//	step                             a reconcile step (the loop's periodic pass)
//	answer HOST [announced]          HOST answers for the VIP; announced: it tells the segment
//	heard HOST                       an advertisement of our group from HOST (Known.Heard, for good)
//	host HOST [mac=MAC] [unresolved|resolved]
//	                                 the kernel's truth of HOST: its MAC now; whether a
//	                                 resolution gets no answer (the entry waits for neigh)
//	neigh HOST [gone]                HOST's neighbour entry arrives (its MAC now), or goes
//	link changed                     the interface changed (LinkChanged)
//	wire ok|failing|none             the VIP's wire sends; cannot send (opened again
//	                                 if it was not open); is not open (failed: opening
//	                                 it failed)
//	ask                              ProbeNow
//
// HOST is self (this node), peer (192.0.2.12, a router of our group once
// heard) or stranger; MAC is one of macNames.
func TestGuardScripts(t *testing.T) {
	scenario.Walk(t, "testdata/guard", func() func(*testing.T, *datadriven.TestData) string { return (&guardScript{}).run })
}

var (
	scriptVIP   = netip.MustParseAddr("192.0.2.100")
	scriptStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// macNames are the hardware addresses a script names.
	macNames = map[string]net.HardwareAddr{
		"self":        {2, 0, 0, 0, 0, 1},
		"peer":        {2, 0, 0, 0, 0, 2},
		"peer-remade": {2, 0, 0, 0, 0, 7}, // peer's interface made again
		"stranger":    {2, 0, 0, 0, 0, 9},
	}
)

// scriptHost is a host of the segment as the kernel knows it.
type scriptHost struct {
	ip         netip.Addr
	mac        string // a key of macNames
	unresolved bool   // a resolution gets no answer
}

// guardScript is one scenario's guard, clock and the node around it.
type guardScript struct {
	g     *Guard
	k     *Known
	w     *scriptWire
	now   time.Time
	next  time.Time  // when the next round is due (Round's answer); zero: none
	out   []happened // what happened since the last command's output
	hosts map[string]*scriptHost
	asked []netip.Addr // resolutions asked of the kernel, not yet answered
	// The reconcile step's view: the election's word and whether the VIP
	// is bound.
	election bind.Election
	bound    bool
}

func (s *guardScript) run(t *testing.T, d *datadriven.TestData) string {
	c := scenario.New(t, d)
	arg, dur, first := c.Arg, c.Dur, c.First
	host := func() *scriptHost {
		h, ok := s.hosts[first()]
		if !ok {
			d.Fatalf(t, "no host %s", first())
		}
		return h
	}
	if d.Cmd != "guard" && s.g == nil {
		d.Fatalf(t, "no guard yet: start with guard")
	}
	switch d.Cmd {
	case "guard":
		s.start(dur("settle", 0), dur("defendwait", 0))
	case "at":
		x, err := time.ParseDuration(first())
		if err != nil {
			d.Fatalf(t, "at: %v", err)
		}
		at := scriptStart.Add(x)
		if at.Before(s.now) {
			d.Fatalf(t, "at %s: the clock runs forward only", first())
		}
		for !s.next.IsZero() && !s.next.After(at) {
			s.now = s.next
			s.next = s.g.Round()
			s.drain()
		}
		s.now = at
		return s.take()
	case "elect", "resign":
		s.election = bind.Elected
		if d.Cmd == "resign" {
			s.election = bind.NotElected
		}
		s.step()
	case "step":
		s.step()
	case "answer":
		_, announced := arg("announced")
		s.g.Observe(scriptVIP, Claim{MAC: macNames[host().mac], Announced: announced})
	case "heard":
		s.k.Heard(host().ip, 0)
	case "host":
		h := host()
		if v, ok := arg("mac"); ok {
			if _, known := macNames[v]; !known {
				d.Fatalf(t, "no MAC %s", v)
			}
			h.mac = v
		}
		if _, ok := arg("unresolved"); ok {
			h.unresolved = true
		}
		if _, ok := arg("resolved"); ok {
			h.unresolved = false
		}
	case "neigh":
		h := host()
		if _, gone := arg("gone"); gone {
			s.k.NeighGone(h.ip)
		} else {
			s.k.Neigh(h.ip, macNames[h.mac])
		}
	case "link":
		s.g.LinkChanged()
	case "wire":
		switch first() {
		case "ok", "failing":
			s.w.failing = first() == "failing"
			if s.g.vips[scriptVIP].wire.conn == nil {
				s.g.Attach(scriptVIP, s.w) // opened again
			}
		case "none":
			s.g.Attach(scriptVIP, nil)
			if _, failed := arg("failed"); failed {
				s.g.OpenFailed(scriptVIP, errors.New("no such device"))
			}
		default:
			d.Fatalf(t, "wire %s", first())
		}
	case "ask":
		s.g.ProbeNow()
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	s.drain()
	return s.take() + s.state()
}

// start makes the scenario's guard and starts it as Run does.
func (s *guardScript) start(settle, defendWait time.Duration) {
	s.now = scriptStart
	clock := func() time.Time { return s.now }
	s.hosts = map[string]*scriptHost{
		"self":     {mac: "self"},
		"peer":     {ip: netip.MustParseAddr("192.0.2.12"), mac: "peer"},
		"stranger": {ip: netip.MustParseAddr("192.0.2.99"), mac: "stranger"},
	}
	s.k = NewKnown(nil, clock, func(a netip.Addr) { s.asked = append(s.asked, a) })
	s.g = NewGuard([]netip.Addr{scriptVIP}, nil, s.k, clock, slog.New(logTap{s}))
	s.g.Settle, s.g.DefendWait = settle, defendWait
	s.k.SetLink(1, macNames["self"])
	s.w = &scriptWire{s: s}
	s.g.Attach(scriptVIP, s.w)
	s.g.Start()
	s.next = s.g.Round()
}

// drain does what the guard asked for until it rests: a round when it
// was woken, the reconcile step at a Changed note, the kernel's answers
// to the resolutions asked.
func (s *guardScript) drain() {
	for range 1000 {
		busy := false
		select {
		case <-s.k.Grew(): // the daemon's relay
			s.g.Rejudge()
			busy = true
		default:
		}
		select {
		case <-s.g.wake:
			s.next = s.g.Round()
			busy = true
		default:
		}
		for _, n := range s.g.Notes() {
			busy = true
			switch {
			case n.Kind == Served && n.Member:
				s.printf("served member")
			case n.Kind == Contested || n.Kind == Defend:
				s.printf("%s %s", n.Kind, n.VIP)
			default:
				s.printf("%s", n.Kind)
			}
			if n.Kind == Changed {
				s.step()
			}
		}
		asked := s.asked
		s.asked = nil
		for _, a := range asked {
			busy = true
			s.resolve(a)
		}
		if !busy {
			return
		}
	}
	panic("the guard does not rest")
}

// resolve answers a resolution the identity asked for, as the kernel
// would: the host's neighbour entry, unless it gets no answer.
func (s *guardScript) resolve(a netip.Addr) {
	for _, name := range slices.Sorted(maps.Keys(s.hosts)) {
		h := s.hosts[name]
		if h.ip != a {
			continue
		}
		if h.unresolved {
			s.printf("resolve %s: no answer", name)
			return
		}
		s.printf("resolve %s: %s", name, h.mac)
		s.k.Neigh(a, macNames[h.mac])
		return
	}
	s.printf("resolve %s: no such host", a)
}

// step is the reconcile step for the VIP: tell the guard, read its
// verdict, bind or release as bind.Decide says.
func (s *guardScript) step() {
	if s.election == bind.Undecided {
		return // the step does not ask the check (reconcile's inputs)
	}
	s.g.Tell(scriptVIP, s.election == bind.Elected, s.bound)
	v := s.g.Verdict(scriptVIP)
	hold, _ := bind.Decide(bind.Inputs{Election: s.election, Check: v, Bound: s.bound})
	switch {
	case hold && !s.bound:
		s.printf("bind (verdict %s)", v)
	case !hold && s.bound:
		s.printf("release (verdict %s)", v)
	}
	s.bound = hold
}

// happened is one line of a script's output: what, and when.
type happened struct {
	at   time.Duration // from the start
	what string
}

func (s *guardScript) printf(format string, args ...any) {
	s.out = append(s.out, happened{s.now.Sub(scriptStart), fmt.Sprintf(format, args...)})
}

// take returns what happened since the last call, a line a thing; three
// or more alike in a row (a failing wire's probes) are one line, with the
// first and last time and how many.
func (s *guardScript) take() string {
	var b strings.Builder
	for i := 0; i < len(s.out); {
		j := i + 1
		for j < len(s.out) && s.out[j].what == s.out[i].what {
			j++
		}
		if j-i < 3 {
			j = i + 1
			fmt.Fprintf(&b, "%s %s\n", s.out[i].at, s.out[i].what)
		} else {
			fmt.Fprintf(&b, "%s-%s %s (%d)\n", s.out[i].at, s.out[j-1].at, s.out[i].what, j-i)
		}
		i = j
	}
	s.out = nil
	return b.String()
}

// state prints the election's word, whether the VIP is bound, the
// guard's verdict (Verdict) and the claim it has outstanding.
func (s *guardScript) state() string {
	var b strings.Builder
	fmt.Fprintf(&b, "= election=%s bound=%v verdict=%s", strings.ReplaceAll(s.election.String(), " ", "-"), s.bound, s.g.Verdict(scriptVIP))
	s.g.mu.Lock()
	if c := s.g.vips[scriptVIP].others.claim; c != nil {
		fmt.Fprintf(&b, " claim=%s", macName(c.MAC))
		if c.reported {
			b.WriteString(" (reported)")
		}
	}
	s.g.mu.Unlock()
	b.WriteString("\n")
	return b.String()
}

func macName(mac net.HardwareAddr) string {
	for name, m := range macNames {
		if slices.Equal(m, mac) {
			return name
		}
	}
	return mac.String()
}

// scriptWire is the VIP's wire: it sends when told to, and says so.
type scriptWire struct {
	s       *guardScript
	failing bool
}

func (w *scriptWire) Probe() error {
	if w.failing {
		w.s.printf("probe failed")
		return errors.New("network is down")
	}
	w.s.printf("probe")
	return nil
}

// Read is never called: the script's answers reach Observe.
func (w *scriptWire) Read() (Claim, error) { return Claim{}, net.ErrClosed }
func (w *scriptWire) Close() error         { return nil }

// logTap prints what the guard logs at Info and above: the level, the
// message and the host named.
type logTap struct{ s *guardScript }

func (l logTap) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }

func (l logTap) Handle(_ context.Context, r slog.Record) error {
	mac := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "mac" {
			m, _ := net.ParseMAC(a.Value.String())
			mac = " (" + macName(m) + ")"
		}
		return true
	})
	l.s.printf("%s: %s%s", strings.ToLower(r.Level.String()), r.Message, mac)
	return nil
}

func (l logTap) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logTap) WithGroup(string) slog.Handler      { return l }
