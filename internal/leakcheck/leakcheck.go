// Package leakcheck finds fragments of a secret in a message, for the
// tests (fuzz targets) that assert no error ever repeats a password.
package leakcheck

import "strings"

// Fragment returns a piece of secret, n bytes long, that msg contains
// although it occurs in value only inside the secret (so msg can only have
// taken it from there), or "" when there is none. Pieces made of characters
// that the caller's fixed message text may contain must be excluded by the
// caller's choice of alphabet: see Alphabet.
func Fragment(msg, value, secret string, n int) string {
	for i := 0; i+n <= len(secret); i++ {
		w := secret[i : i+n]
		if !strings.ContainsAny(w, Letters) {
			continue
		}
		if strings.Count(value, w) == 1 && strings.Contains(msg, w) {
			return w
		}
	}
	return ""
}

// Letters occur in no fixed message text of ours (no variable name, unit or
// keyword has them); a fragment must hold one to count.
const Letters = "QXZJW"

// Alphabet is what fuzzed secrets are made of: Letters and the separators
// that break naive parsers.
const Alphabet = Letters + "%,&+=?@:;#! /[]"

// Secret maps arbitrary fuzz bytes onto Alphabet.
func Secret(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = Alphabet[int(c)%len(Alphabet)]
	}
	return string(out)
}
