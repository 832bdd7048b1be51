package config

import "fmt"

// Error is an invalid configuration value. Its message names the variable,
// its flag and the bad value (masked for secrets).
type Error struct {
	Field  Field
	Value  string
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	name := e.Field.Env
	if e.Field.Flag != "" {
		name += " (--" + e.Field.Flag + ")"
	}
	if e.Value == "" {
		return fmt.Sprintf("invalid %s: %s", name, e.Reason)
	}
	v, ok := e.shown()
	if !ok {
		return fmt.Sprintf("invalid %s (the value is not repeated: %s): %s", name, v, e.Reason)
	}
	return fmt.Sprintf("invalid %s=%q: %s", name, v, e.Reason)
}

// shown is the value as an error may show it; false: not at all, and why.
// A secret is redacted; a peer list shows what it parsed to, passwords
// redacted, and nothing when it does not parse (its passwords could be
// anywhere in it).
func (e *Error) shown() (string, bool) {
	switch {
	case e.Field.Secret:
		return redacted, true
	case e.Field.Name == "BGPPeers":
		var l PeerList
		if l.Decode(e.Value) != nil {
			return "it does not parse and may hold a password", false
		}
		return l.String(), true
	}
	return e.Value, true
}

// errorf builds an *Error for the Go field name with the given value.
func errorf(fieldName string, value any, format string, args ...any) *Error {
	f, _ := fieldByName(fieldName)
	v := fmt.Sprint(value)
	if value == nil {
		v = ""
	}
	return &Error{Field: f, Value: v, Reason: fmt.Sprintf(format, args...)}
}
