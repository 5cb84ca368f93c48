package deliveries

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
)

// Store reads and writes delivery and attempt records, and reads the
// subscription columns deliveries need.
type Store struct {
	q *dbq.Queries
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{q: dbq.New(pool)} }

// MatchedSubscription is a subscription an event goes to.
type MatchedSubscription struct {
	ID   string
	Name string
}

// SubscriptionsForEvent applies spec 6 rules 1-2: active subscriptions of
// the account naming the event type, for every job or for this job. It
// returns one page of at most in.Limit in id order after in.After.
func (s *Store) SubscriptionsForEvent(ctx context.Context, in MatchInput) (MatchPage, error) {
	var job *int64
	if id, err := strconv.ParseInt(in.JobID, 10, 64); err == nil {
		job = &id
	}
	if in.Limit <= 0 {
		return MatchPage{}, fmt.Errorf("match subscriptions: page size %d", in.Limit)
	}
	rows, err := s.q.SubscriptionsForEvent(ctx, dbq.SubscriptionsForEventParams{
		AccountID: in.AccountID, EventType: in.EventType, JobID: job, After: in.After, PageSize: int32(in.Limit),
	})
	if err != nil {
		return MatchPage{}, fmt.Errorf("match subscriptions: %w", err)
	}
	page := MatchPage{Subscriptions: make([]MatchedSubscription, 0, len(rows)), More: len(rows) == in.Limit}
	for _, r := range rows {
		page.Subscriptions = append(page.Subscriptions, MatchedSubscription{ID: r.ID, Name: r.Name})
	}
	return page, nil
}

// AllSubscriptionsForEvent pages through every match (legacy fan-out).
func (s *Store) AllSubscriptionsForEvent(ctx context.Context, accountID int64, eventType, jobID string) ([]MatchedSubscription, error) {
	var all []MatchedSubscription
	in := MatchInput{AccountID: accountID, EventType: eventType, JobID: jobID, Limit: 1000}
	for {
		page, err := s.SubscriptionsForEvent(ctx, in)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Subscriptions...)
		if !page.More {
			return all, nil
		}
		in.After = page.Subscriptions[len(page.Subscriptions)-1].ID
	}
}

// AttemptTarget is what an attempt needs from the database.
type AttemptTarget struct {
	ClientURL        string
	Active           bool
	Deleted          bool
	SecretKeyID      string
	SecretCiphertext []byte
	// DeliveryStatus is the record's status before this attempt; a final
	// status means an earlier run of this step already finished the job.
	DeliveryStatus string
	// AttemptsRecorded, LastStatusCode and LastError summarize the attempts
	// already recorded: an attempt whose number is recorded already ran.
	AttemptsRecorded int32
	LastStatusCode   int
	LastError        string
	// LastRetryDelay is the wait the last failed attempt asked for
	// (Retry-After, capped); zero when it asked for none.
	LastRetryDelay time.Duration
}

// ErrSubscriptionGone means the subscription row no longer exists.
var ErrSubscriptionGone = errors.New("subscription no longer exists")

// LoadAttempt loads what an attempt needs, in one read-only round trip:
// the subscription's destination and sealed secret, and what is recorded of
// the delivery so far. The record itself is written once, by RecordAttempt
// (or Cancel), so an attempt costs one write.
func (s *Store) LoadAttempt(ctx context.Context, in AttemptInput) (AttemptTarget, error) {
	row, err := s.q.LoadDeliveryAttempt(ctx, dbq.LoadDeliveryAttemptParams{
		DeliveryID: in.DeliveryID, SubscriptionID: in.SubscriptionID, AccountID: in.AccountID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return AttemptTarget{}, ErrSubscriptionGone
	}
	if err != nil {
		return AttemptTarget{}, fmt.Errorf("load delivery attempt %s: %w", in.DeliveryID, err)
	}
	return AttemptTarget{
		ClientURL: row.ClientUrl, Active: row.Active, Deleted: row.Deleted,
		SecretKeyID: row.SecretKeyID, SecretCiphertext: row.SecretCiphertext,
		DeliveryStatus: row.DeliveryStatus, AttemptsRecorded: row.AttemptCount,
		LastStatusCode: int(row.LastStatusCode), LastError: row.LastError,
		LastRetryDelay: time.Duration(row.RetryDelayMs) * time.Millisecond,
	}, nil
}

// optional is a nullable text column's value: NULL for "".
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AttemptRecord is the outcome of one attempt, as recorded.
type AttemptRecord struct {
	AttemptNumber   int32
	StartedAt       time.Time
	Duration        time.Duration
	StatusCode      int
	ErrorKind       string
	ErrorMessage    string
	ResponseSnippet string
	// DeliveryStatus is the delivery's status after this attempt.
	DeliveryStatus string
	// RetryDelay is the wait before the next attempt that this one asked
	// for (Retry-After, capped); zero for the backoff schedule.
	RetryDelay time.Duration
}

// RecordAttempt stores an attempt of the delivery in: it creates the
// delivery record at its first recorded attempt (or updates its summary and
// points it at in.WorkflowID), adds the attempt and sets the subscription's
// http_status_code and dispatched_at, in one statement. It is idempotent:
// recording the same attempt again adds nothing, and a final record stays.
func (s *Store) RecordAttempt(ctx context.Context, in AttemptInput, r AttemptRecord) error {
	err := s.q.RecordDeliveryAttempt(ctx, dbq.RecordDeliveryAttemptParams{
		DeliveryID: in.DeliveryID, SubscriptionID: in.SubscriptionID, AccountID: in.AccountID,
		EventID: in.EventID, EventType: in.EventType, JobID: in.JobID, RunID: in.RunID, IsTest: in.IsTest,
		RedeliveryOf: optional(in.RedeliveryOf), Payload: in.Payload, WorkflowID: in.WorkflowID,
		AttemptNumber: r.AttemptNumber, StartedAt: r.StartedAt, DurationMs: int32(r.Duration.Milliseconds()),
		StatusCode: int32(r.StatusCode), ErrorKind: r.ErrorKind, ErrorMessage: r.ErrorMessage,
		ResponseSnippet: r.ResponseSnippet, Status: r.DeliveryStatus, RetryDelayMs: r.RetryDelay.Milliseconds(),
	})
	if err != nil {
		return fmt.Errorf("record attempt %d of %s: %w", r.AttemptNumber, in.DeliveryID, err)
	}
	return nil
}

// CreatePending writes the record of a delivery before its first attempt
// (a redelivery asked for through the API, whose id is returned at once).
func (s *Store) CreatePending(ctx context.Context, in AttemptInput) error {
	err := s.q.CreatePendingDelivery(ctx, dbq.CreatePendingDeliveryParams{
		DeliveryID: in.DeliveryID, SubscriptionID: in.SubscriptionID, AccountID: in.AccountID,
		EventID: in.EventID, EventType: in.EventType, JobID: in.JobID, RunID: in.RunID, IsTest: in.IsTest,
		RedeliveryOf: optional(in.RedeliveryOf), Payload: in.Payload, WorkflowID: in.WorkflowID,
	})
	if err != nil {
		return fmt.Errorf("create pending delivery %s: %w", in.DeliveryID, err)
	}
	return nil
}

// Handover names, for each delivery, the delivery workflow that makes its
// retries.
type Handover struct {
	DeliveryID string
	WorkflowID string
}

// RepointDeliveries records at hand-over which workflow now runs each
// delivery, so Recent Deliveries names it from then on. Deliveries without a
// record yet (their first attempt could not be recorded) are skipped.
func (s *Store) RepointDeliveries(ctx context.Context, hs []Handover) error {
	if len(hs) == 0 {
		return nil
	}
	p := dbq.RepointDeliveriesParams{DeliveryIds: make([]string, len(hs)), WorkflowIds: make([]string, len(hs))}
	for i, h := range hs {
		p.DeliveryIds[i], p.WorkflowIds[i] = h.DeliveryID, h.WorkflowID
	}
	if err := s.q.RepointDeliveries(ctx, p); err != nil {
		return fmt.Errorf("re-point %d handed-over deliveries: %w", len(hs), err)
	}
	return nil
}

// Cancel records the delivery in cancelled (creating its record if no
// attempt was recorded) unless it is already final.
func (s *Store) Cancel(ctx context.Context, in AttemptInput, reason string) error {
	err := s.q.CancelDelivery(ctx, dbq.CancelDeliveryParams{
		DeliveryID: in.DeliveryID, SubscriptionID: in.SubscriptionID, AccountID: in.AccountID,
		EventID: in.EventID, EventType: in.EventType, JobID: in.JobID, RunID: in.RunID, IsTest: in.IsTest,
		RedeliveryOf: optional(in.RedeliveryOf), Payload: in.Payload, WorkflowID: in.WorkflowID, Reason: reason,
	})
	if err != nil {
		return fmt.Errorf("cancel delivery %s: %w", in.DeliveryID, err)
	}
	return nil
}

// Fail marks a delivery failed unless it is already final.
func (s *Store) Fail(ctx context.Context, deliveryID, reason string) error {
	if err := s.q.FailDelivery(ctx, dbq.FailDeliveryParams{DeliveryID: deliveryID, Reason: reason}); err != nil {
		return fmt.Errorf("fail delivery %s: %w", deliveryID, err)
	}
	return nil
}

// PurgeBatch deletes at most batch delivery records created before cutoff.
func (s *Store) PurgeBatch(ctx context.Context, cutoff time.Time, batch int32) (int64, error) {
	n, err := s.q.PurgeDeliveriesBefore(ctx, dbq.PurgeDeliveriesBeforeParams{Cutoff: cutoff, BatchSize: batch})
	if err != nil {
		return 0, fmt.Errorf("purge deliveries: %w", err)
	}
	return n, nil
}

// DispatchTarget is a subscription a test or redelivery goes to.
type DispatchTarget struct {
	ID         string
	Name       string
	EventTypes []string
}

// SubscriptionForDispatch returns a live subscription of the account, or
// ENOTFOUND.
func (s *Store) SubscriptionForDispatch(ctx context.Context, accountID int64, id string) (DispatchTarget, error) {
	row, err := s.q.SubscriptionForDispatch(ctx, dbq.SubscriptionForDispatchParams{ID: id, AccountID: accountID})
	if errors.Is(err, pgx.ErrNoRows) {
		return DispatchTarget{}, webhooks.Errorf(webhooks.ENOTFOUND, "Webhook %s not found.", id)
	}
	if err != nil {
		return DispatchTarget{}, fmt.Errorf("load subscription %s: %w", id, err)
	}
	return DispatchTarget{ID: row.ID, Name: row.Name, EventTypes: row.EventTypes}, nil
}

// AccountExists reports whether an account id is known.
func (s *Store) AccountExists(ctx context.Context, id int64) (bool, error) {
	ok, err := s.q.AccountExists(ctx, id)
	if err != nil {
		return false, fmt.Errorf("look up account %d: %w", id, err)
	}
	return ok, nil
}
