package lab

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// AskARP has the host ask who has ip on its eth0 (an ARP request from its
// own address, broadcast) every period until stop is called: every host
// that answers for ip replies to each request, which a capture on the
// host's switch port shows. The socket takes no packets in (a BPF filter
// that drops all): the answers are for the capture, not for us.
func (h *Host) AskARP(ip netip.Addr, every time.Duration) (stop func(), err error) {
	var c *arp.Client
	err = InNetns(h.NS, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		none, err := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
		if err != nil {
			return err
		}
		pc, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, &packet.Config{Filter: none})
		if err != nil {
			return err
		}
		if c, err = arp.New(ifi, pc); err != nil {
			pc.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ARP socket in %s: %w", h.Name, err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			_ = c.Request(ip)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished; c.Close() }, nil
}

// Switch is the switch's namespace as a host, to run a capture on one of
// its ports (SwitchPort).
func (l *Lab) Switch() *Host { return &Host{Name: "switch", NS: l.sw, lab: l} }

// SwitchPort is the name of the host's port on the switch.
func (h *Host) SwitchPort() string { return "v" + h.Name }
