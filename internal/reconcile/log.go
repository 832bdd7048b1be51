package reconcile

import "log/slog"

// LogChange logs one change with the messages operators grep for.
func LogChange(log *slog.Logger, mode string, c Change) {
	switch c.Action {
	case Installed:
		log.Info("Control-plane VIP bound", "address", c.VIP, "mode", mode)
	case Fixed:
		log.Warn("Control-plane VIP restored after an outside change", "address", c.VIP, "mode", mode)
	case Removed:
		log.Info("Control-plane VIP released", "address", c.VIP, "mode", mode)
	case Lost:
		log.Warn("Control-plane VIP gone from the interface, not bound again now", "address", c.VIP, "mode", mode)
	case Lapsed:
		log.Warn("Control-plane VIP's lifetime ran out before this process renewed it: released until the election speaks again", "address", c.VIP, "mode", mode,
			"hint", "the process did not run (frozen, starved of CPU) or its renewals failed (see the errors before)")
	case Failed:
		log.Error("Reconciling the VIP failed, will retry", "address", c.VIP, "mode", mode, "error", c.Err)
	}
}
