package workflows

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/activities"
)

// TestLearnedLimits_Current: what a shard carries is the latest report of
// each key within learnedLimitsFor, the most recent maxLearnedLimits of
// each kind, sorted by key.
func TestLearnedLimits_Current(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hooks := func(n int, limit int) []activities.WebhookLimit {
		out := make([]activities.WebhookLimit, n)
		for i := range out {
			out[i] = activities.WebhookLimit{WebhookID: fmt.Sprintf("wsu_%03d", i), Limit: limit}
		}
		return out
	}
	tests := []struct {
		name          string
		reports       [][]activities.WebhookLimit // one report a minute from t0
		at            time.Duration               // after t0
		wantN         int
		wantFirst     string
		wantFirstSeen int // its limit
	}{
		{"latest report wins", [][]activities.WebhookLimit{hooks(2, 5), hooks(1, 9)}, 2 * time.Minute, 2, "wsu_000", 9},
		{"ten minutes kept", [][]activities.WebhookLimit{hooks(3, 5)}, 10 * time.Minute, 3, "wsu_000", 5},
		{"then forgotten", [][]activities.WebhookLimit{hooks(3, 5)}, 10*time.Minute + time.Second, 0, "", 0},
		{"a forgotten key's newer report kept", [][]activities.WebhookLimit{hooks(3, 5), nil, nil, hooks(1, 8)}, 11 * time.Minute, 1, "wsu_000", 8},
		{"bounded, the most recent kept", [][]activities.WebhookLimit{hooks(300, 5), hooks(10, 6)}, 2 * time.Minute, maxLearnedLimits, "wsu_000", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLearnedLimits(activities.LearnedLimits{}, t0)
			for i, r := range tt.reports {
				l.add(r, nil, t0.Add(time.Duration(i)*time.Minute))
			}
			got := l.current(t0.Add(tt.at)).Webhooks
			if len(got) != tt.wantN {
				t.Fatalf("%d webhooks carried, want %d", len(got), tt.wantN)
			}
			if tt.wantN == 0 {
				return
			}
			if got[0].WebhookID != tt.wantFirst || got[0].Limit != tt.wantFirstSeen {
				t.Errorf("first %+v, want %s at %d", got[0], tt.wantFirst, tt.wantFirstSeen)
			}
			for i := 1; i < len(got); i++ {
				if got[i-1].WebhookID >= got[i].WebhookID {
					t.Fatalf("not sorted by webhook at %d: %s, %s", i, got[i-1].WebhookID, got[i].WebhookID)
				}
			}
		})
	}
}
