package health

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// TokenTTL is how long a token read from disk is used before it is read again.
const TokenTTL = 5 * time.Minute

// maxTokenSize bounds the token file; service-account tokens are a few KiB.
const maxTokenSize = 64 << 10

// token is what the token file said at the last read.
type token struct {
	value   string // empty when absent or unreadable without a cached value
	present bool   // the file exists: only 200 is healthy
	err     error  // the file exists but could not be read
}

// tokenSource reads the bearer token file and caches it for TokenTTL. A file
// that is absent is cached as absent for the same time; a read error is not
// cached (the next check retries) and keeps the last good token if any.
type tokenSource struct {
	path    string
	now     func() time.Time
	read    func(string) ([]byte, error)
	cached  token
	fetched time.Time
	valid   bool
}

func newTokenSource(path string, now func() time.Time) *tokenSource {
	return &tokenSource{path: path, now: now, read: readLimited}
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTokenSize {
		return nil, fmt.Errorf("token file is larger than %d bytes", maxTokenSize)
	}
	return b, nil
}

// get returns the token to use now.
func (s *tokenSource) get() token {
	now := s.now()
	if s.valid && now.Sub(s.fetched) < TokenTTL && now.Sub(s.fetched) >= 0 {
		return s.cached
	}
	b, err := s.read(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.cached, s.fetched, s.valid = token{}, now, true
	case err == nil && strings.TrimSpace(string(b)) == "":
		return s.failed(errors.New("token file is empty"))
	case err != nil:
		return s.failed(err)
	default:
		s.cached, s.fetched, s.valid = token{value: strings.TrimSpace(string(b)), present: true}, now, true
	}
	return s.cached
}

// failed keeps the last good token (if any) and reports the error; the next
// call reads the file again.
func (s *tokenSource) failed(err error) token {
	t := token{present: true, err: fmt.Errorf("reading token file %s: %w", s.path, err)}
	if s.cached.present {
		t.value = s.cached.value
	}
	s.valid = false
	return t
}
