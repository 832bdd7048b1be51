// Command nfdelay delays every packet of an NFQUEUE queue by a random time,
// uniform in DELAY ± JITTER, and then accepts it: netem's "delay 50ms 20ms"
// for a kernel without the netem qdisc (the stress suite's jitter
// condition). Packets are let go when their time comes, so they may leave
// out of order, as with netem's jitter. Run it in a network namespace with a
// rule such as
//
//	iptables -I INPUT -i eth0 -j NFQUEUE --queue-num 0 --queue-bypass
//
// (bypass: with nfdelay gone, packets pass undelayed). It ends on SIGTERM or
// SIGINT and prints how many packets it delayed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
)

func main() {
	queue := flag.Uint("queue", 0, "NFQUEUE queue number")
	delay := flag.Duration("delay", 50*time.Millisecond, "mean delay")
	jitter := flag.Duration("jitter", 20*time.Millisecond, "the delay varies uniformly by this much either way")
	flag.Parse()
	if *jitter < 0 || *jitter > *delay || *queue > 65535 {
		fmt.Fprintln(os.Stderr, "nfdelay: want 0 <= -jitter <= -delay and -queue 0-65535")
		os.Exit(2)
	}
	if err := run(uint16(*queue), *delay, *jitter); err != nil {
		fmt.Fprintln(os.Stderr, "nfdelay:", err)
		os.Exit(1)
	}
}

func run(queue uint16, delay, jitter time.Duration) error {
	// A full queue lets packets through undelayed rather than dropping
	// them (jitter must not turn into loss); the count is printed at the end.
	nf, err := nfqueue.Open(&nfqueue.Config{NfQueue: queue, MaxPacketLen: 0, MaxQueueLen: 8192,
		Copymode: nfqueue.NfQnlCopyMeta, Flags: nfqueue.NfQaCfgFlagFailOpen, WriteTimeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("opening queue %d: %w", queue, err)
	}
	defer nf.Close()
	if err := nf.Con.SetReadBuffer(4 << 20); err != nil {
		return err
	}
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// The queue stays bound until every packet taken has its verdict: an
	// unbound queue drops what it still holds.
	ctx, unbind := context.WithCancel(context.Background())
	defer unbind()
	var n, errs, failures atomic.Int64
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		id := *a.PacketID
		d := delay - jitter + time.Duration(rand.Int64N(int64(2*jitter)+1))
		time.AfterFunc(d, func() {
			if nf.SetVerdict(id, nfqueue.NfAccept) != nil { // netlink.Conn: safe for concurrent use
				errs.Add(1)
			}
		})
		n.Add(1)
		return 0
	}
	onErr := func(err error) int {
		if ctx.Err() != nil || errors.Is(err, os.ErrClosed) || failures.Add(1) > 100 {
			return 1
		}
		fmt.Fprintln(os.Stderr, "nfdelay: receiving:", err)
		return 0
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		return err
	}
	fmt.Println("nfdelay: ready")
	<-sig.Done()
	time.Sleep(delay + jitter) // the last ones go
	unbind()
	fmt.Printf("nfdelay: %d packets delayed %v ± %v, %d verdicts failed; %s\n", n.Load(), delay, jitter, errs.Load(), queueStats(queue))
	return nil
}

// queueStats is the kernel's line for the queue in this network namespace
// (/proc/self/net/netfilter/nfnetlink_queue): queue, port id, waiting,
// copy mode, copy range, queue_dropped, user_dropped, last id.
func queueStats(queue uint16) string {
	b, err := os.ReadFile("/proc/self/net/netfilter/nfnetlink_queue")
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 7 && f[0] == fmt.Sprint(queue) {
			return fmt.Sprintf("waiting %s, dropped %s (queue full) and %s (not delivered)", f[2], f[5], f[6])
		}
	}
	return "no kernel statistics"
}
