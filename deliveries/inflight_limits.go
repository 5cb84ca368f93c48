package deliveries

import (
	"context"
	"fmt"
	"time"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// InFlightLimit is the in-flight limit a worker last reported for a
// webhook whose limit had moved from the initial one.
type InFlightLimit struct {
	WebhookID       string
	Limit           int
	InFlight        int
	UnloadedLatency time.Duration
	ObservedAt      time.Time
}

// InFlightLimitFreshFor is how long a reported limit holds: the limiter's
// idle time, after which a webhook's limit starts again.
const InFlightLimitFreshFor = 10 * time.Minute

// SaveInFlightLimits keeps the limits a round reports.
func (s *Store) SaveInFlightLimits(ctx context.Context, limits []InFlightLimit) error {
	if len(limits) == 0 {
		return nil
	}
	p := dbq.SaveInFlightLimitsParams{Ids: make([]string, len(limits)), Limits: make([]int32, len(limits)),
		InFlight: make([]int32, len(limits)), UnloadedLatencyMs: make([]int32, len(limits))}
	for i, l := range limits {
		p.Ids[i], p.Limits[i], p.InFlight[i] = l.WebhookID, int32(l.Limit), int32(l.InFlight)
		p.UnloadedLatencyMs[i] = int32(l.UnloadedLatency.Milliseconds())
	}
	if err := s.q.SaveInFlightLimits(ctx, p); err != nil {
		return fmt.Errorf("save %d in-flight limits: %w", len(limits), err)
	}
	return nil
}

// InFlightLimitOf returns the limit last reported for a webhook within
// InFlightLimitFreshFor; false when there is none (its limit is the
// initial one).
func (s *Store) InFlightLimitOf(ctx context.Context, webhookID string) (InFlightLimit, bool, error) {
	rows, err := s.q.InFlightLimit(ctx, dbq.InFlightLimitParams{SubscriptionID: webhookID, FreshMs: InFlightLimitFreshFor.Milliseconds()})
	if err != nil {
		return InFlightLimit{}, false, fmt.Errorf("in-flight limit of %s: %w", webhookID, err)
	}
	if len(rows) == 0 {
		return InFlightLimit{}, false, nil
	}
	r := rows[0]
	return InFlightLimit{WebhookID: webhookID, Limit: int(r.InFlightLimit), InFlight: int(r.InFlight),
		UnloadedLatency: time.Duration(r.UnloadedLatencyMs) * time.Millisecond, ObservedAt: r.ObservedAt}, true, nil
}
