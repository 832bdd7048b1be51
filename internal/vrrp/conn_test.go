package vrrp

import (
	"bytes"
	"errors"
	"testing"
)

func TestStripIPv4Header(t *testing.T) {
	payload := []byte{0x31, 51, 100, 1}
	hdr := make([]byte, 20)
	hdr[0] = 0x45
	withOpts := append([]byte{0x46}, make([]byte, 23)...) // IHL 6: 4 bytes of options
	for _, tt := range []struct {
		in   []byte
		want []byte
		err  error
	}{
		{append(hdr, payload...), payload, nil},
		{append(withOpts, payload...), payload, nil},
		{hdr[:19], nil, DropShort},                         // shorter than a header
		{append([]byte{0x65}, hdr[1:]...), nil, DropShort}, // not IPv4
		{append([]byte{0x44}, hdr[1:]...), nil, DropShort}, // IHL below 5
		{append([]byte{0x4f}, hdr[1:]...), nil, DropShort}, // IHL past the end
	} {
		got, err := stripIPv4Header(tt.in)
		if !bytes.Equal(got, tt.want) || !errors.Is(err, tt.err) {
			t.Errorf("stripIPv4Header(% x) = % x, %v; want % x, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func FuzzStripIPv4Header(f *testing.F) {
	f.Add(append([]byte{0x45}, make([]byte, 27)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := stripIPv4Header(b)
		if err == nil && (len(b) < 20 || len(p) > len(b)-20) {
			t.Fatalf("% x: payload of %d bytes accepted", b, len(p))
		}
	})
}
