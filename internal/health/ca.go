package health

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
)

// maxCASize bounds a CA bundle file.
const maxCASize = 1 << 20

// caSource finds the cluster CA that verifies the apiserver: the first of
// its paths that exists (an explicit file, or kubeadm's and k3s's places).
// Before bootstrap none may exist yet; every check costs one stat per path,
// so a CA that appears, is replaced or goes away is used from the next
// check on, as the token file is.
type caSource struct {
	paths []string
	stat  func(string) (fileID, error)
	read  func(string) ([]byte, error)

	looked bool
	path   string // of the CA in force; empty: none
	id     fileID
	pool   *x509.CertPool
	err    error // the CA found could not be used
}

func newCASource(paths []string) *caSource {
	return &caSource{paths: paths, stat: statID, read: func(p string) ([]byte, error) { return readLimited(p, maxCASize) }}
}

// caState is the CA in force after a look at the files.
type caState struct {
	Pool    *x509.CertPool // nil: nothing verifies the apiserver
	Path    string
	Err     error // a CA file exists but is unusable (Pool is nil)
	Changed bool  // differs from the previous look
}

// get looks at the files and returns the CA in force.
func (s *caSource) get() caState {
	path, id := "", fileID{}
	for _, p := range s.paths {
		got, err := s.stat(p)
		if err == nil {
			path, id = p, got
			break
		}
		if !errors.Is(err, fs.ErrNotExist) { // there, but not for us: the read says why
			path = p
			break
		}
	}
	if s.looked && path == s.path && id == s.id { // unchanged, usable or not: an unusable file is read again once it changes
		return caState{Pool: s.pool, Path: s.path, Err: s.err}
	}
	s.looked, s.path, s.id, s.pool, s.err = true, path, id, nil, nil
	if path != "" {
		s.pool, s.err = s.load(path)
	}
	return caState{Pool: s.pool, Path: s.path, Err: s.err, Changed: true}
}

func (s *caSource) load(path string) (*x509.CertPool, error) {
	b, err := s.read(path)
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// CheckCA reports the cluster CA file in force among paths (the first that
// exists) and whether it is usable: a directory, a file it may not read or
// one with no PEM certificate is an error naming the file. None there yet
// (before bootstrap) is no error: path is empty.
func CheckCA(paths []string) (path string, err error) {
	st := newCASource(paths).get()
	return st.Path, st.Err
}
