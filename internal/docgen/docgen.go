// Package docgen keeps generated sections of the docs in step with the code
// that generates them: the section between two marker lines must equal
// what the code renders now.
package docgen

import (
	"fmt"
	"os"
	"strings"
)

// Check compares the section of the file at path between the begin and end
// marker lines with content. With update it rewrites the section instead.
// The error says how to update when they differ.
func Check(path, begin, end, content string, update bool, how string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	before, rest, ok1 := strings.Cut(string(doc), begin)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		return fmt.Errorf("%s lacks the generated-section markers", path)
	}
	want := before + begin + content + end + after
	if update {
		return os.WriteFile(path, []byte(want), 0o644)
	}
	if string(doc) != want {
		return fmt.Errorf("%s is out of date: run %s", path, how)
	}
	return nil
}
