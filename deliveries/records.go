package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/formats"
)

// Delivery is a delivery record (Recent Deliveries).
type Delivery struct {
	ID             string
	SubscriptionID string
	EventID        string
	EventType      string
	JobID          string
	RunID          string
	IsTest         bool
	RedeliveryOf   string
	Status         string
	AttemptCount   int
	LastStatusCode int
	LastError      string
	WorkflowID     string
	// WorkflowRunID is the run of WorkflowID that made the last attempt.
	WorkflowRunID string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	CompletedAt   *time.Time
	// NextAttemptAt is when the next attempt is due; nil once final (only
	// from ListDeliveries and Delivery).
	NextAttemptAt *time.Time
	// LastDuration is the last attempt's duration (0 before any attempt).
	LastDuration time.Duration
	Payload      []byte    // only from Delivery
	Attempts     []Attempt // only from Delivery
	// Held: the delivery waits while its webhook's breaker is open (route
	// 'held'): no attempt goes but the breaker's probe, which may be it.
	Held bool
	// OrderReleasedAt, when set, is when the delivery went although an
	// earlier event of its run (its job.run.started) was still pending,
	// after waiting the per-run order's bound (only from Delivery).
	OrderReleasedAt *time.Time
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	Number          int
	StartedAt       time.Time
	Duration        time.Duration
	StatusCode      int
	ErrorKind       string
	ErrorMessage    string
	ResponseSnippet string
	// LateStatusCode, when not 0, is an answer that came LateAfter after
	// the attempt was sent, past its deadline (the attempt failed).
	LateStatusCode int
	LateAfter      time.Duration
}

// ListFilter selects a page of a subscription's deliveries.
type ListFilter struct {
	Status string // "" for every status
	Limit  int
	Offset int
}

// ListDeliveries returns a page of a subscription's deliveries, newest
// first, and how many match in all.
func (s *Store) ListDeliveries(ctx context.Context, accountID int64, subscriptionID string, f ListFilter) ([]Delivery, int64, error) {
	var status *string
	if f.Status != "" {
		status = &f.Status
	}
	rows, err := s.q.ListDeliveries(ctx, dbq.ListDeliveriesParams{
		SubscriptionID: subscriptionID, AccountID: accountID, Status: status,
		RowLimit: int32(f.Limit), RowOffset: int32(f.Offset),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list deliveries of %s: %w", subscriptionID, err)
	}
	total, err := s.q.CountDeliveries(ctx, dbq.CountDeliveriesParams{SubscriptionID: subscriptionID, AccountID: accountID, Status: status})
	if err != nil {
		return nil, 0, fmt.Errorf("count deliveries of %s: %w", subscriptionID, err)
	}
	out := make([]Delivery, 0, len(rows))
	for _, r := range rows {
		out = append(out, Delivery{
			ID: r.ID, SubscriptionID: subscriptionID, EventID: r.EventID, EventType: r.EventType,
			JobID: r.JobID, RunID: r.RunID, IsTest: r.IsTest, RedeliveryOf: deref(r.RedeliveryOf),
			Status: r.Status, AttemptCount: int(r.AttemptCount), LastStatusCode: int(r.LastStatusCode),
			LastError: r.LastError, WorkflowID: r.WorkflowID, WorkflowRunID: r.WorkflowRunID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			CompletedAt: r.CompletedAt, NextAttemptAt: r.NextAttemptAt, LastDuration: time.Duration(r.LastDurationMs) * time.Millisecond,
			Held: r.Held,
		})
	}
	return out, total, nil
}

// Delivery returns one delivery with its attempts and exact body, or
// ENOTFOUND when it is not the account's subscription's. The record and
// its attempts are read in one snapshot: a record written between two
// reads would show an attempt beside the status from before it.
func (s *Store) Delivery(ctx context.Context, accountID int64, subscriptionID, id string) (d Delivery, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		d, err = delivery(ctx, dbq.New(tx), s.links, accountID, subscriptionID, id)
		return err
	})
	return d, err
}

func delivery(ctx context.Context, q *dbq.Queries, links formats.RunLinks, accountID int64, subscriptionID, id string) (Delivery, error) {
	row, err := q.GetDelivery(ctx, dbq.GetDeliveryParams{ID: id, SubscriptionID: subscriptionID, AccountID: accountID})
	r := row.WebhookDelivery
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, webhooks.Errorf(webhooks.ENOTFOUND, "Delivery %s not found.", id)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("get delivery %s: %w", id, err)
	}
	body, err := FixedBody{Payload: r.Payload, Name: deref(r.BodyName)}.Bytes(EventBody{AccountID: accountID,
		SubscriptionID: subscriptionID, EventID: r.EventID, EventType: r.EventType, EventData: row.EventData,
		ToolName: row.EventToolName, AcceptedAt: row.EventAcceptedAt, Links: links})
	if err != nil {
		return Delivery{}, fmt.Errorf("build the body of delivery %s: %w", id, err)
	}
	attempts, err := q.ListDeliveryAttempts(ctx, id)
	if err != nil {
		return Delivery{}, fmt.Errorf("list attempts of %s: %w", id, err)
	}
	d := Delivery{
		ID: r.ID, SubscriptionID: r.SubscriptionID, EventID: r.EventID, EventType: r.EventType,
		JobID: r.JobID, RunID: r.RunID, IsTest: r.IsTest, RedeliveryOf: deref(r.RedeliveryOf),
		Status: r.Status, AttemptCount: int(r.AttemptCount), LastStatusCode: int(r.LastStatusCode),
		LastError: r.LastError, WorkflowID: r.WorkflowID, WorkflowRunID: r.WorkflowRunID.String(), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		CompletedAt: r.CompletedAt, NextAttemptAt: r.NextAttemptAt, Payload: body, Attempts: make([]Attempt, 0, len(attempts)),
		OrderReleasedAt: r.OrderReleasedAt, Held: r.Route == "held",
	}
	for _, a := range attempts {
		d.Attempts = append(d.Attempts, Attempt{
			Number: int(a.AttemptNumber), StartedAt: a.StartedAt, Duration: time.Duration(a.DurationMs) * time.Millisecond,
			StatusCode: int(a.StatusCode), ErrorKind: a.ErrorKind, ErrorMessage: a.ErrorMessage,
			ResponseSnippet: a.ResponseSnippet,
		})
		if a.LateStatusCode != nil && a.LateAfterMs != nil {
			last := &d.Attempts[len(d.Attempts)-1]
			last.LateStatusCode, last.LateAfter = int(*a.LateStatusCode), time.Duration(*a.LateAfterMs)*time.Millisecond
		}
	}
	return d, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
