package bgp

import (
	"testing"
	"time"
)

func TestDroppedByPeer(t *testing.T) {
	for _, tt := range []struct {
		reason    string
		sinceLast time.Duration
		want      bool
	}{
		{"notification-received code 6(cease) subcode 10(undefined)", time.Minute, true},
		{"read failed", 10 * time.Second, true},
		{"hold timer expired", reconnectEvery, true},
		{"notification-sent code 6(cease) subcode 4(administrative reset)", time.Minute, false},
		{"notification-received code 2(open message error) subcode 2(bad peer as)", time.Second, false},
		{"read failed", 0, false},
	} {
		if got := droppedByPeer(tt.reason, tt.sinceLast); got != tt.want {
			t.Errorf("droppedByPeer(%q, %s) = %v, want %v", tt.reason, tt.sinceLast, got, tt.want)
		}
	}
}
