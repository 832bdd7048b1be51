package bfd

import "sync"

// notifier hands state changes to onChange on a goroutine of its own, in
// the order they happened: the sessions' lock is held where a change
// happens, and onChange may take time (cmd resets the BGP session, up to
// a second) that must not hold up the other sessions' packets.
type notifier struct {
	onChange func(Change)
	wake     chan struct{}

	mu    sync.Mutex
	queue []Change
}

func newNotifier(onChange func(Change)) *notifier {
	return &notifier{onChange: onChange, wake: make(chan struct{}, 1)}
}

// add queues c; it never blocks.
func (n *notifier) add(c Change) {
	if n.onChange == nil {
		return
	}
	n.mu.Lock()
	n.queue = append(n.queue, c)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run delivers the queued changes until stop, then the ones still queued.
func (n *notifier) run(stop <-chan struct{}) {
	for {
		select {
		case <-n.wake:
			n.deliver()
		case <-stop:
			n.deliver()
			return
		}
	}
}

func (n *notifier) deliver() {
	n.mu.Lock()
	q := n.queue
	n.queue = nil
	n.mu.Unlock()
	for _, c := range q {
		n.onChange(c)
	}
}
