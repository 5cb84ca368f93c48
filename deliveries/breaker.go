package deliveries

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks/db/dbq"
)

// What an open breaker does to a webhook's deliveries (its delivery
// settings' on_outage, or the operator's default).
const (
	// OnOutageRetry: nothing; each delivery keeps its retry schedule and
	// ends failed after its attempts, as the spec says. The default.
	OnOutageRetry = "retry"
	// OnOutageHold: they wait, held, without spending attempts, until a
	// probe is answered.
	OnOutageHold = "hold"
)

// ValidOnOutage reports whether v is an on_outage mode.
func ValidOnOutage(v string) bool { return v == OnOutageRetry || v == OnOutageHold }

// Breaker is the endpoint breaker's policy. After Threshold attempts in a
// row that failed as a receiver that is down fails (Outage), the webhook's
// breaker opens: an incident starts (and is told to the account), and the
// webhook goes to its own lane. Its deliveries keep their retry schedule
// unless it holds them during an outage (on_outage "hold"; OnOutage is the
// default of webhooks that set none): then they wait without spending
// attempts, and one probe (its oldest pending delivery, signed as usual)
// goes out after ProbeFirst, then after each backoff step (doubling) up to
// ProbeMax between probes. Any attempt that gets an answer closes the
// breaker, and what is due drains oldest first at a rate that ramps up
// from RampStart per second, doubling each second, until it reaches
// RampFull per second.
type Breaker struct {
	Threshold  int // 0: never opens
	ProbeFirst time.Duration
	ProbeMax   time.Duration
	RampStart  int
	RampFull   int
	// OnOutage is OnOutageRetry or OnOutageHold ("": retry).
	OnOutage string
}

// onOutage is b's default mode, never "".
func (b Breaker) onOutage() string {
	if b.OnOutage == OnOutageHold {
		return OnOutageHold
	}
	return OnOutageRetry
}

// RampLimit is how many attempts the drain may start in the second that
// begins elapsed after the breaker closed; 0 once the ramp is over (no
// limit but the webhook's in-flight cap).
func (b Breaker) RampLimit(elapsed time.Duration) int {
	if b.RampStart <= 0 || elapsed < 0 {
		return 0
	}
	limit := b.RampStart
	for s := time.Second; s <= elapsed; s += time.Second {
		limit *= 2
		if limit >= b.RampFull {
			return 0
		}
	}
	return limit
}

// RampDuration is how long the ramp lasts after the breaker closes.
func (b Breaker) RampDuration() time.Duration {
	if b.RampStart <= 0 {
		return 0
	}
	d := time.Duration(0)
	for limit := b.RampStart; limit < b.RampFull; limit *= 2 {
		d += time.Second
	}
	return d
}

// ProbeStep is the wait before the probe after failedProbes failed ones.
func (b Breaker) ProbeStep(failedProbes int) time.Duration {
	d := b.ProbeFirst
	for range failedProbes {
		if d >= b.ProbeMax {
			break
		}
		d *= 2
	}
	return min(d, b.ProbeMax)
}

// Outage says whether an attempt failed the way a receiver that is down
// fails: no answer (connection refused or reset, a timeout) or an answer
// that says it cannot serve (5xx, 408, 429). Other answers, 2xx or not,
// come from a live receiver.
func Outage(errorKind string, statusCode int) bool {
	switch errorKind {
	case KindTimeout, KindConnection:
		return true
	case KindHTTPStatus:
		return statusCode >= 500 || statusCode == http.StatusRequestTimeout || statusCode == http.StatusTooManyRequests
	}
	return false
}

// outageOf is an attempt as the breaker counts it: 1 an outage, 0 an
// answer from a live receiver, -1 no attempt or one that says nothing of
// the receiver (the request could not be made).
func outageOf(r AttemptRecord) int32 {
	switch {
	case r.StartedAt.IsZero():
		return -1
	case Outage(r.ErrorKind, r.StatusCode):
		return 1
	case r.ErrorKind == "" || r.ErrorKind == KindHTTPStatus:
		return 0
	}
	return -1
}

// BreakerState is a webhook's breaker, incident and backlog.
type BreakerState struct {
	SubscriptionID string
	AccountID      int64
	Route          string
	// Open: the breaker is open since OpenedAt. Held: it holds the
	// webhook's deliveries (Route is RouteHeld): the next probe goes at
	// NextProbeAt; FailedProbes failed since it opened. Open but not held,
	// the deliveries keep their retry schedule and there is no probe.
	Open         bool
	Held         bool
	OpenedAt     *time.Time
	NextProbeAt  *time.Time
	FailedProbes int
	// FailuresInARow counts the latest attempts that failed as an outage.
	FailuresInARow int
	// ClosedAt is when it last closed (the drain ramps up from there);
	// ClosedAgo is how long ago that was by the database's clock (set by
	// BreakerTimes only).
	ClosedAt  *time.Time
	ClosedAgo time.Duration
	// IncidentStartedAt: an incident goes on since then (announced to the
	// account at IncidentAnnouncedAt, nil: not yet).
	IncidentStartedAt   *time.Time
	IncidentAnnouncedAt *time.Time
	Active              bool
	Deleted             bool
	// Backlog counts the webhook's deliveries not final.
	Backlog int64
}

// Breaker returns a webhook's breaker state, or ErrSubscriptionGone.
func (s *Store) Breaker(ctx context.Context, subscriptionID string) (BreakerState, error) {
	r, err := s.q.BreakerState(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return BreakerState{}, ErrSubscriptionGone
	}
	if err != nil {
		return BreakerState{}, fmt.Errorf("breaker of %s: %w", subscriptionID, err)
	}
	return breakerState(r), nil
}

func breakerState(r dbq.BreakerStateRow) BreakerState {
	return BreakerState{
		SubscriptionID: r.ID, AccountID: r.AccountID, Route: r.DeliveryRoute,
		Open: r.BreakerOpenedAt != nil || r.DeliveryRoute == RouteHeld, Held: r.DeliveryRoute == RouteHeld,
		OpenedAt: r.BreakerOpenedAt, NextProbeAt: r.BreakerNextProbeAt, FailedProbes: int(r.BreakerFailedProbes),
		FailuresInARow: int(r.AttemptFailuresInARow), ClosedAt: r.BreakerClosedAt,
		IncidentStartedAt: r.IncidentStartedAt, IncidentAnnouncedAt: r.IncidentAnnouncedAt,
		Active: r.Active, Deleted: r.Deleted, Backlog: r.Backlog,
	}
}

// BreakerTimes is Breaker without the backlog (0): one primary-key read,
// for a lane's every round.
func (s *Store) BreakerTimes(ctx context.Context, subscriptionID string) (BreakerState, error) {
	r, err := s.q.BreakerTimes(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return BreakerState{}, ErrSubscriptionGone
	}
	if err != nil {
		return BreakerState{}, fmt.Errorf("breaker of %s: %w", subscriptionID, err)
	}
	st := breakerState(dbq.BreakerStateRow{ID: r.ID, AccountID: r.AccountID, DeliveryRoute: r.DeliveryRoute,
		AttemptFailuresInARow: r.AttemptFailuresInARow, BreakerOpenedAt: r.BreakerOpenedAt, BreakerNextProbeAt: r.BreakerNextProbeAt,
		BreakerFailedProbes: r.BreakerFailedProbes, BreakerClosedAt: r.BreakerClosedAt, IncidentStartedAt: r.IncidentStartedAt,
		IncidentAnnouncedAt: r.IncidentAnnouncedAt, Active: r.Active, Deleted: r.Deleted})
	if r.BreakerClosedAt != nil {
		st.ClosedAgo = time.Duration(max(r.ClosedAgoMs, 0)) * time.Millisecond
	}
	return st, nil
}

// HoldDeliveries moves the pending deliveries of webhooks whose breaker is
// open to the held route, where no round takes them.
func (s *Store) HoldDeliveries(ctx context.Context, subscriptionIDs []string) error {
	if len(subscriptionIDs) == 0 {
		return nil
	}
	if _, err := s.q.HoldDeliveries(ctx, subscriptionIDs); err != nil {
		return fmt.Errorf("hold the deliveries of %d webhooks: %w", len(subscriptionIDs), err)
	}
	return nil
}

// ReleaseHeld gives a webhook whose breaker closed its held deliveries
// back, due now; it says how many.
func (s *Store) ReleaseHeld(ctx context.Context, subscriptionID string) (int64, error) {
	n, err := s.q.ReleaseHeld(ctx, subscriptionID)
	if err != nil {
		return 0, fmt.Errorf("release the held deliveries of %s: %w", subscriptionID, err)
	}
	return n, nil
}

// ClaimProbe takes a held webhook's probe: its oldest pending delivery,
// whose attempt does not count against its retries. None: nothing pending.
func (s *Store) ClaimProbe(ctx context.Context, c Claim) ([]Claimed, error) {
	rows, err := s.q.ClaimProbe(ctx, dbq.ClaimProbeParams{
		SubscriptionID: c.SubscriptionID, LeaseMs: c.Lease.Milliseconds(),
		WorkflowID: c.WorkflowID, WorkflowRunID: c.WorkflowRunID,
	})
	if err != nil {
		return nil, fmt.Errorf("claim the probe of %s: %w", c.SubscriptionID, err)
	}
	out := make([]Claimed, len(rows))
	for i, r := range rows {
		out[i] = claimedOf(dbq.ClaimDueDeliveriesRow(r))
	}
	return out, nil
}

// ErrBreakerClosed: the webhook's breaker is not open, or does not hold
// its deliveries (there is no probe).
var ErrBreakerClosed = errors.New("the webhook's breaker is not open")

// ProbeNow makes a held webhook's next probe due now, or ErrBreakerClosed.
func (s *Store) ProbeNow(ctx context.Context, subscriptionID string) error {
	_, err := s.q.ProbeNow(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrBreakerClosed
	}
	if err != nil {
		return fmt.Errorf("probe %s now: %w", subscriptionID, err)
	}
	return nil
}

// OverdueProbes lists at most limit held webhooks whose probe is overdue
// by more than grace, to wake their own lanes.
func (s *Store) OverdueProbes(ctx context.Context, grace time.Duration, limit int) ([]RoutedWebhook, error) {
	rows, err := s.q.OverdueProbes(ctx, dbq.OverdueProbesParams{GraceMs: grace.Milliseconds(), MaxWebhooks: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list overdue probes: %w", err)
	}
	out := make([]RoutedWebhook, len(rows))
	for i, r := range rows {
		out[i] = RoutedWebhook{SubscriptionID: r.ID, AccountID: r.AccountID, Route: RouteOwn}
	}
	return out, nil
}

// OpenBreakers counts the webhooks whose breaker is open (metrics).
func (s *Store) OpenBreakers(ctx context.Context) (int64, error) {
	n, err := s.q.CountOpenBreakers(ctx)
	if err != nil {
		return 0, fmt.Errorf("count open breakers: %w", err)
	}
	return n, nil
}

// ResetBreaker closes the breaker of a webhook deactivated or deleted by
// hand and forgets its incident: activated again, it starts afresh. A held
// webhook goes back to its shard, or to its own lane when it has a rate
// limit; its row is locked first, so a rate limit set meanwhile is seen.
func (s *Store) ResetBreaker(ctx context.Context, subscriptionID string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if err := q.LockWebhookRoutes(ctx, []string{subscriptionID}); err != nil {
			return err
		}
		return q.ResetBreaker(ctx, subscriptionID)
	})
	if err != nil {
		return fmt.Errorf("reset the breaker of %s: %w", subscriptionID, err)
	}
	return nil
}

// DisableByReceiver deactivates the webhook of an attempt whose receiver
// asked to stop deliveries (Webhook-Delivery: disable), only if the webhook
// still has the client_url and secret version the attempt was sent with:
// false when it was not active, or has moved away from that receiver.
func (s *Store) DisableByReceiver(ctx context.Context, rec AttemptRecord, reason string) (WebhookChange, bool, error) {
	subscriptionID := rec.SubscriptionID
	r, err := s.q.DisableByReceiver(ctx, dbq.DisableByReceiverParams{ID: subscriptionID, Reason: reason,
		ClientUrl: rec.ClientURL, SecretVersion: rec.SecretVersion})
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookChange{}, false, nil
	}
	if err != nil {
		return WebhookChange{}, false, fmt.Errorf("deactivate %s at its receiver's request: %w", subscriptionID, err)
	}
	return WebhookChange{SubscriptionID: r.ID, AccountID: r.AccountID, Disabled: true, ByReceiver: true}, true, nil
}

// StrandedHeld lists at most limit webhooks whose breaker is closed but
// which still have held deliveries (a release that failed, or an event
// ingested as the breaker closed), for the sweeper to release.
func (s *Store) StrandedHeld(ctx context.Context, limit int) ([]RoutedWebhook, error) {
	rows, err := s.q.StrandedHeld(ctx, int32(limit))
	if err != nil {
		return nil, fmt.Errorf("list webhooks with stranded held deliveries: %w", err)
	}
	out := make([]RoutedWebhook, len(rows))
	for i, r := range rows {
		out[i] = RoutedWebhook{SubscriptionID: r.SubscriptionID, AccountID: r.AccountID, Route: RouteOwn}
	}
	return out, nil
}
