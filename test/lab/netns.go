package lab

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// InNetns runs fn on an OS thread switched into the named network namespace.
// Sockets fn creates stay in that namespace after it returns.
func InNetns(name string, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("getting current netns: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening netns %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering netns %s: %w", name, err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime ends it with this goroutine.
		return fmt.Errorf("leaving netns %s: %w", name, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}
