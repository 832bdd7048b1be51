package spread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// struct bpf_sk_lookup (include/uapi/linux/bpf.h): the offsets the
// program reads.
const (
	ctxFamily    = 8
	ctxProtocol  = 12
	ctxLocalIP4  = 40
	ctxLocalIP6  = 44
	ctxLocalPort = 60 // host byte order

	afInet      = 2
	afInet6     = 10
	ipprotoTCP  = 6
	skPass      = 1
	keyIPv4     = 0 // the listeners' slots in the socket map
	keyIPv6     = 1
	socketSlots = 2
)

// Steer hands new TCP connections to VIP:port to our listeners (sk_lookup,
// Linux 5.9) while its lease runs (Renew). Close detaches it; so does the
// end of the process, however it ends. A process that stops running
// (frozen, starved) stops renewing: once the lease has run out, new
// connections reach the local apiserver as without spreading, instead of a
// listener nobody reads.
type Steer struct {
	sockets *ebpf.Map
	lease   *ebpf.Map // one u64: until when (CLOCK_MONOTONIC, ns) to steer
	// leaseMem is the lease map's memory, mapped into ours: renewals are
	// plain stores, no bpf system call (which kernels before 6.5 refuse
	// without CAP_BPF when unprivileged BPF is disabled, as distributions
	// set it; the daemon drops CAP_BPF once the program is attached).
	leaseMem *ebpf.Memory
	prog     *ebpf.Program
	link     link.Link
}

// Listeners are the sockets that take the steered connections: one per
// address family of the VIPs (nil for a family without one).
type Listeners struct {
	V4, V6 *net.TCPListener
}

// NewSteer loads the program for vips on port, with a lease that runs for
// lease from now, and attaches it to the network namespace netns (a file of
// /proc/PID/ns/net).
func NewSteer(netns *os.File, vips []netip.Addr, port uint16, ls Listeners, lease time.Duration) (_ *Steer, err error) {
	s := &Steer{}
	defer func() {
		if err != nil {
			s.Close() // what was made before the failure
		}
	}()
	s.sockets, err = ebpf.NewMap(&ebpf.MapSpec{Name: "cpvip_spread", Type: ebpf.SockMap,
		KeySize: 4, ValueSize: 4, MaxEntries: socketSlots})
	if err != nil {
		return nil, fmt.Errorf("socket map: %w", err)
	}
	s.lease, err = ebpf.NewMap(&ebpf.MapSpec{Name: "cpvip_lease", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1,
		Flags: unix.BPF_F_MMAPABLE})
	if err != nil {
		return nil, fmt.Errorf("lease map: %w", err)
	}
	if s.leaseMem, err = s.lease.Memory(); err != nil {
		return nil, fmt.Errorf("mapping the lease map: %w", err)
	}
	if err := s.Renew(lease); err != nil {
		return nil, err
	}
	for key, l := range map[uint32]*net.TCPListener{keyIPv4: ls.V4, keyIPv6: ls.V6} {
		if l == nil {
			continue
		}
		if err := s.put(key, l); err != nil {
			return nil, err
		}
	}
	ins, err := program(s.sockets.FD(), s.lease.FD(), vips, port)
	if err != nil {
		return nil, err
	}
	s.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "cpvip_spread", Type: ebpf.SkLookup,
		AttachType: ebpf.AttachSkLookup, License: "Apache-2.0", Instructions: ins})
	if err != nil {
		return nil, fmt.Errorf("loading the sk_lookup program: %w", err)
	}
	l, err := link.AttachNetNs(int(netns.Fd()), s.prog)
	if err != nil { // l is a nil *NetNsLink: not stored, or s.link would be a non-nil interface
		return nil, fmt.Errorf("attaching the sk_lookup program: %w", err)
	}
	s.link = l
	return s, nil
}

// Renew makes the steering run for d from now (a lease the program checks
// on every new connection). No system call but the clock's (vDSO).
func (s *Steer) Renew(d time.Duration) error {
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return fmt.Errorf("reading the monotonic clock: %w", err)
	}
	return s.setLease(uint64(now.Nano() + d.Nanoseconds()))
}

// Expire ends the lease now: new connections reach the kernel's own
// listener until the next Renew.
func (s *Steer) Expire() error { return s.setLease(0) }

// setLease stores the lease's end in the map's memory: one aligned 8-byte
// store, which the program reads with one 8-byte load.
func (s *Steer) setLease(until uint64) error {
	if _, err := s.leaseMem.WriteAt(binary.NativeEndian.AppendUint64(nil, until), 0); err != nil {
		return fmt.Errorf("setting the steering's lease: %w", err)
	}
	return nil
}

// put stores l's socket in slot key.
func (s *Steer) put(key uint32, l *net.TCPListener) error {
	rc, err := l.SyscallConn()
	if err != nil {
		return err
	}
	var uerr error
	if err := rc.Control(func(fd uintptr) {
		uerr = s.sockets.Update(key, uint32(fd), ebpf.UpdateAny)
	}); err != nil {
		return err
	}
	if uerr != nil {
		return fmt.Errorf("socket map: adding %s: %w (a multipath TCP listener cannot be added)", l.Addr(), uerr)
	}
	return nil
}

// Close detaches the program: new connections reach the apiserver's own
// socket again.
func (s *Steer) Close() error {
	var errs []error
	if s.link != nil {
		errs = append(errs, s.link.Close())
	}
	if s.prog != nil {
		errs = append(errs, s.prog.Close())
	}
	if s.sockets != nil {
		errs = append(errs, s.sockets.Close())
	}
	if s.lease != nil {
		errs = append(errs, s.lease.Close())
	}
	return errors.Join(errs...)
}

// program returns the sk_lookup program: a TCP connection to one of vips
// on port goes to the listener of its family in the socket map at fd while
// the lease (the map at leaseFD) has not run out; anything else, or no
// listener there, passes to the kernel's own lookup.
func program(fd, leaseFD int, vips []netip.Addr, port uint16) (asm.Instructions, error) {
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // the context
		asm.LoadMem(asm.R2, asm.R6, ctxProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ipprotoTCP, "pass"),
		asm.LoadMem(asm.R2, asm.R6, ctxLocalPort, asm.Word),
		asm.JNE.Imm(asm.R2, int32(port), "pass"),
		asm.LoadMem(asm.R2, asm.R6, ctxFamily, asm.Word),
	}
	for i, v := range vips {
		next := fmt.Sprintf("vip%d", i+1)
		words := addrWords(v)
		family, key, off := int32(afInet), int32(keyIPv4), int16(ctxLocalIP4)
		if v.Is6() {
			family, key, off = afInet6, keyIPv6, ctxLocalIP6
		}
		first := asm.JNE.Imm(asm.R2, family, next)
		if i > 0 {
			first = first.WithSymbol(fmt.Sprintf("vip%d", i))
		}
		ins = append(ins, first)
		for w, word := range words {
			ins = append(ins,
				asm.LoadMem(asm.R3, asm.R6, off+int16(4*w), asm.Word),
				asm.JNE.Imm32(asm.R3, word, next))
		}
		ins = append(ins, asm.Mov.Imm(asm.R8, key), asm.Ja.Label("assign"))
	}
	if len(vips) == 0 {
		return nil, errors.New("no VIP to steer")
	}
	ins = append(ins,
		asm.Ja.Label("pass").WithSymbol(fmt.Sprintf("vip%d", len(vips))),
		asm.StoreImm(asm.RFP, -8, 0, asm.Word).WithSymbol("assign"), // the lease's key
		asm.LoadMapPtr(asm.R1, leaseFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R9, asm.R0, 0, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.JGT.Reg(asm.R0, asm.R9, "pass"), // the lease ran out
		asm.StoreMem(asm.RFP, -4, asm.R8, asm.Word),
		asm.LoadMapPtr(asm.R1, fd),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "pass"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnSkAssign.Call(),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.FnSkRelease.Call(),
		asm.Mov.Imm(asm.R0, skPass).WithSymbol("pass"),
		asm.Return(),
	)
	return ins, nil
}

// addrWords is v as the context holds it: 32-bit words in network byte
// order, read in the machine's own.
func addrWords(v netip.Addr) []int32 {
	b := v.AsSlice()
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.NativeEndian.Uint32(b[4*i:]))
	}
	return out
}

// ListenLoopback returns a listener for Steer on the loopback address of
// the family (127.0.0.1 or ::1), on a port the kernel picks: reachable
// from this host only, and no port of anyone else's taken. Plain TCP: Go
// listens with multipath TCP when the kernel has it, and a socket map
// takes no multipath socket.
func ListenLoopback(ctx context.Context, v6 bool) (*net.TCPListener, error) {
	lc := net.ListenConfig{}
	lc.SetMultipathTCP(false)
	network, addr := "tcp4", "127.0.0.1:0"
	if v6 {
		network, addr = "tcp6", "[::1]:0"
	}
	l, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return l.(*net.TCPListener), nil
}
