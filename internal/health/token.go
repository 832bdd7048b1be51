package health

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
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

// fileID is what tells that a file was replaced or rewritten: a rotated
// token (kubelet swaps a symlink, an operator renames a new file in place)
// has another inode, size or modification time.
type fileID struct {
	ino, size int64
	mtime     time.Time
}

// statID follows symlinks, as the read does.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.ino = int64(st.Ino)
	}
	return id, nil
}

// tokenSource reads the bearer token file and caches its content for
// TokenTTL. Every check costs one stat of the file: a file that appears (the
// token written after bootstrap), disappears or is replaced (rotation) is
// read at once; an unchanged one is read again when the TTL has passed. A
// read error is not cached (the next check retries) and keeps the last good
// token if any.
type tokenSource struct {
	path    string
	now     func() time.Time
	read    func(string) ([]byte, error)
	stat    func(string) (fileID, error)
	cached  token
	id      fileID // of the file when cached was read
	fetched time.Time
	valid   bool
}

func newTokenSource(path string, now func() time.Time) *tokenSource {
	return &tokenSource{path: path, now: now, read: func(p string) ([]byte, error) { return readLimited(p, maxTokenSize) }, stat: statID}
}

// readLimited reads a file of at most max bytes: a larger one is an error,
// not a truncated read.
func readLimited(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}

// get returns the token to use now.
func (s *tokenSource) get() token {
	now := s.now()
	id, statErr := s.stat(s.path)
	if errors.Is(statErr, fs.ErrNotExist) {
		s.cached, s.valid = token{}, false
		return s.cached
	}
	age := now.Sub(s.fetched)
	if s.valid && statErr == nil && id == s.id && age < TokenTTL && age >= 0 {
		return s.cached
	}
	b, err := s.read(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist): // gone between stat and read
		s.cached, s.valid = token{}, false
	case err == nil && strings.TrimSpace(string(b)) == "":
		return s.failed(errors.New("token file is empty"))
	case err != nil:
		return s.failed(err)
	default:
		s.cached, s.id, s.fetched, s.valid = token{value: strings.TrimSpace(string(b)), present: true}, id, now, true
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
