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
		return fmt.Sprintf("invalid %s: %s", name, redactPasswords(e.Reason))
	}
	v := redactPasswords(e.Value)
	if e.Field.Secret {
		v = redacted
	}
	return fmt.Sprintf("invalid %s=%q: %s", name, v, redactPasswords(e.Reason))
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
