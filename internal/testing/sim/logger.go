package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// traceHandler writes the real code's log lines into the trace, stamped
// with the virtual time and the node; debug lines are left out.
type traceHandler struct {
	w     *world
	node  string
	attrs []slog.Attr
}

func newLogger(w *world, node string) *slog.Logger { return slog.New(&traceHandler{w: w, node: node}) }

func (h *traceHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *traceHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.w.logf("%s   %s", h.node, b.String())
	return nil
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{w: h.w, node: h.node, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *traceHandler) WithGroup(string) slog.Handler { return h }
