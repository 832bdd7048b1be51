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
	"sync"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
)

func main() {
	queue := flag.Uint("queue", 0, "NFQUEUE queue number")
	delay := flag.Duration("delay", 50*time.Millisecond, "mean delay")
	jitter := flag.Duration("jitter", 20*time.Millisecond, "the delay varies uniformly by this much either way")
	flag.Parse()
	if *jitter > *delay || *queue > 65535 {
		fmt.Fprintln(os.Stderr, "nfdelay: want -jitter at most -delay and -queue 0-65535")
		os.Exit(2)
	}
	if err := run(uint16(*queue), *delay, *jitter); err != nil {
		fmt.Fprintln(os.Stderr, "nfdelay:", err)
		os.Exit(1)
	}
}

func run(queue uint16, delay, jitter time.Duration) error {
	nf, err := nfqueue.Open(&nfqueue.Config{NfQueue: queue, MaxPacketLen: 0, MaxQueueLen: 8192,
		Copymode: nfqueue.NfQnlCopyMeta, WriteTimeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("opening queue %d: %w", queue, err)
	}
	defer nf.Close()
	if err := nf.SetOption(netlink.NoENOBUFS, true); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var (
		mu      sync.Mutex // one verdict on the socket at a time
		n, errs int
	)
	verdict := func(id uint32) {
		mu.Lock()
		defer mu.Unlock()
		if err := nf.SetVerdict(id, nfqueue.NfAccept); err != nil {
			errs++
		}
	}
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID == nil {
			return 0
		}
		id := *a.PacketID
		d := delay - jitter + time.Duration(rand.Int64N(int64(2*jitter)+1))
		time.AfterFunc(d, func() { verdict(id) })
		mu.Lock()
		n++
		mu.Unlock()
		return 0
	}
	onErr := func(err error) int {
		if ctx.Err() != nil || errors.Is(err, os.ErrClosed) {
			return 1
		}
		fmt.Fprintln(os.Stderr, "nfdelay: receiving:", err)
		return 0
	}
	if err := nf.RegisterWithErrorFunc(ctx, hook, onErr); err != nil {
		return err
	}
	<-ctx.Done()
	time.Sleep(delay + jitter) // the last ones go
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("nfdelay: %d packets delayed %v ± %v, %d verdicts failed\n", n, delay, jitter, errs)
	return nil
}
