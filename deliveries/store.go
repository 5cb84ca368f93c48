package deliveries

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/eventdata"
	"github.com/jobhooks/jobhooks/formats"
)

// Store reads and writes events, deliveries and attempts, and reads the
// subscription columns deliveries need.
type Store struct {
	pool  *pgxpool.Pool
	q     *dbq.Queries
	links formats.RunLinks
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool, q: dbq.New(pool)} }

// WithRunLinks returns a Store on the same pool whose bodies link runs
// with l (the deployment's RUN_URL_TEMPLATE).
func (s *Store) WithRunLinks(l formats.RunLinks) *Store {
	c := *s
	c.links = l
	return &c
}

// RunLinks makes the run links of the bodies the store builds (none
// without a store).
func (s *Store) RunLinks() formats.RunLinks {
	if s == nil {
		return formats.RunLinks{}
	}
	return s.links
}

// NewEvent is an event to store: its id, its run data (kept as
// eventdata.Marshal writes it), and the tool name of the payload's
// version field.
type NewEvent struct {
	ID        string
	AccountID int64
	Type      string
	JobID     string
	RunID     string
	Data      webhooks.RunData
	ToolName  string
	// TraceParent is the W3C traceparent of the ingestion ("" untraced):
	// each attempt's span joins the event's trace.
	TraceParent string
	// OutcomeAt orders a run's outcome for state-change webhooks
	// (OutcomeTime); zero: the time of ingestion.
	OutcomeAt time.Time
	// RoutingVersion is the version of the account's routing the event was
	// judged with (0: the account never had any); Routed says the account
	// had routing at that version (filters, or a webhook that follows
	// states), and Rejected names the webhooks whose filters rejected the
	// event (docs/delivery.md).
	RoutingVersion int64
	Routed         bool
	Rejected       []string
}

// IngestResult says what became of one event of a group.
type IngestResult struct {
	AccountKnown bool // false: nothing was stored, the account does not exist
	Stored       bool // false with AccountKnown: a duplicate, already stored
}

// IngestEvents stores a group of events in one statement, claims their
// deliveries to every matching webhook that their routing lets through
// (skipped ones for inactive webhooks, whose bodies it then records), and
// returns each event's result in order and the webhooks that got
// deliveries, with their routes (whom to wake). Once it returns, the
// events and their deliveries are durable. A *StaleRoutingError means
// nothing was stored: some events were judged with routing older than
// their account's. A group none of whose events is Routed runs the
// statement without routing's steps.
func (s *Store) IngestEvents(ctx context.Context, events []NewEvent) ([]IngestResult, []RoutedWebhook, error) {
	p := dbq.IngestEventsParams{
		Ids: make([]string, len(events)), AccountIds: make([]int64, len(events)),
		EventTypes: make([]string, len(events)), JobIds: make([]string, len(events)),
		RunIds: make([]string, len(events)), Datas: make([][]byte, len(events)), ToolNames: make([]string, len(events)),
		TraceParents: make([][]byte, len(events)), RoutingVersions: make([]int64, len(events)),
		RejectedDeliveryKeys: []string{},
	}
	index := make(map[string][]int, len(events))
	routed := false
	for i, ev := range events {
		p.Ids[i], p.AccountIds[i], p.EventTypes[i] = ev.ID, ev.AccountID, ev.Type
		p.JobIds[i], p.RunIds[i], p.Datas[i], p.ToolNames[i] = ev.JobID, ev.RunID, eventdata.Marshal(ev.Data), ev.ToolName
		p.TraceParents[i], p.RoutingVersions[i] = packTraceParent(ev.TraceParent), ev.RoutingVersion
		routed = routed || ev.Routed || len(ev.Rejected) > 0
		index[ev.ID] = append(index[ev.ID], i)
	}
	var rows []dbq.IngestEventsRow
	err := s.withIngestionPlans(ctx, func(q *dbq.Queries) (err error) {
		if routed {
			rows, err = q.IngestEvents(ctx, withRouting(p, events))
			return err
		}
		plain, err := q.IngestEventsWithoutRouting(ctx, dbq.IngestEventsWithoutRoutingParams{
			Ids: p.Ids, AccountIds: p.AccountIds, EventTypes: p.EventTypes, JobIds: p.JobIds, RunIds: p.RunIds,
			Datas: p.Datas, ToolNames: p.ToolNames, TraceParents: p.TraceParents, RoutingVersions: p.RoutingVersions,
		})
		rows = make([]dbq.IngestEventsRow, len(plain))
		for i, r := range plain {
			rows[i] = dbq.IngestEventsRow(r)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store %d events: %w", len(events), err)
	}
	if stale := staleAccounts(rows); stale != nil {
		return nil, nil, stale
	}
	results, hooks := s.ingestResults(ctx, events, index, rows)
	return results, hooks, nil
}

// withRouting adds what the statement's routing steps read: the deliveries
// filters rejected, and each outcome's order for state-change webhooks.
func withRouting(p dbq.IngestEventsParams, events []NewEvent) dbq.IngestEventsParams {
	p.OutcomeAts, p.RunKeys = make([]time.Time, len(events)), make([][]byte, len(events))
	now := time.Now()
	for i, ev := range events {
		p.OutcomeAts[i], p.RunKeys[i] = ev.OutcomeAt, RunOrderKey(ev.RunID)
		if ev.OutcomeAt.IsZero() {
			p.OutcomeAts[i] = now
		}
		for _, sub := range ev.Rejected {
			p.RejectedDeliveryKeys = append(p.RejectedDeliveryKeys, DeliveryKey(ev.ID, sub))
		}
	}
	return p
}

// ingestResults reads the statement's rows: each event's result, in order,
// the webhooks that got deliveries, and the skipped deliveries, whose
// bodies it records.
func (s *Store) ingestResults(ctx context.Context, events []NewEvent, index map[string][]int, rows []dbq.IngestEventsRow) ([]IngestResult, []RoutedWebhook) {
	results := make([]IngestResult, len(events))
	var routed []RoutedWebhook
	var skipped []string
	for _, r := range rows {
		switch r.Kind {
		case "routed":
			routed = append(routed, RoutedWebhook{SubscriptionID: r.ID, AccountID: r.AccountID, Route: r.Route, LaneKey: int(r.LaneKey)})
			continue
		case "skipped":
			skipped = append(skipped, r.ID)
			continue
		}
		for _, i := range index[r.ID] {
			results[i] = IngestResult{AccountKnown: r.AccountKnown, Stored: r.Stored}
		}
	}
	// The events are stored either way: a skipped delivery whose body could
	// not be recorded now gets it built when it is sent again.
	_ = s.FixBodies(ctx, skipped)
	return results, routed
}

// WebhookTarget is a webhook as its attempts go to it: where, signed with
// which secrets, and whether it still takes deliveries, as read at
// ObservedAt.
type WebhookTarget struct {
	ID        string
	AccountID int64
	Name      string
	ClientURL string
	Active    bool
	Deleted   bool
	Route     string // RouteShared, RouteOwn, RoutePaused or RouteHeld
	// SecretVersion counts the webhook's secret rotations: signing keys
	// cached under another version are stale.
	SecretVersion    int32
	SecretKeyID      string
	SecretCiphertext []byte
	// The previous secret after a rotation, valid until its expiry (nil
	// PreviousSecretExpiresAt: there is none).
	PreviousSecretKeyID      string
	PreviousSecretCiphertext []byte
	PreviousSecretExpiresAt  *time.Time
	// ObservedAt is when this state was read at the latest: set by the
	// round that read it, just before the statement
	// (webhooks.AttemptStateFreshFor).
	ObservedAt time.Time
}

// ErrSubscriptionGone means the subscription row no longer exists.
var ErrSubscriptionGone = errors.New("subscription no longer exists")

// LoadTarget returns a webhook as its attempts go to it now, or
// ErrSubscriptionGone.
func (s *Store) LoadTarget(ctx context.Context, subscriptionID string) (WebhookTarget, error) {
	t, err := targetOf(s.q.LoadWebhookTarget(ctx, subscriptionID))
	if err != nil && !errors.Is(err, ErrSubscriptionGone) {
		return WebhookTarget{}, fmt.Errorf("load webhook %s: %w", subscriptionID, err)
	}
	return t, err
}

// ReadTarget is LoadTarget for a fence: its ObservedAt is now() once a
// connection is free, right before the statement, which sees every change
// committed before it starts. A wait for a connection (seconds when the
// worker's pool is busy) so does not age the state it reads: with the time
// taken before the wait, every fence read on a busy pool was too old
// (webhooks.AttemptStateFreshFor), every late attempt was given back
// unsent and claimed again, and the claims and releases kept the pool
// busy (the soak's stall).
func (s *Store) ReadTarget(ctx context.Context, subscriptionID string, now func() time.Time) (WebhookTarget, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return WebhookTarget{}, fmt.Errorf("load webhook %s: %w", subscriptionID, err)
	}
	defer conn.Release()
	observed := now()
	t, err := targetOf(dbq.New(conn).LoadWebhookTarget(ctx, subscriptionID))
	if err != nil && !errors.Is(err, ErrSubscriptionGone) {
		return WebhookTarget{}, fmt.Errorf("load webhook %s: %w", subscriptionID, err)
	}
	t.ObservedAt = observed
	return t, err
}

// targetOf is the webhook a LoadWebhookTarget read, or ErrSubscriptionGone.
func targetOf(r dbq.LoadWebhookTargetRow, err error) (WebhookTarget, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookTarget{}, ErrSubscriptionGone
	}
	if err != nil {
		return WebhookTarget{}, err
	}
	return WebhookTarget{
		ID: r.ID, AccountID: r.AccountID, Name: r.Name, ClientURL: r.ClientUrl, Active: r.Active,
		Deleted: r.Deleted, Route: r.DeliveryRoute, SecretVersion: r.SecretVersion,
		SecretKeyID: r.SecretKeyID, SecretCiphertext: r.SecretCiphertext,
		PreviousSecretKeyID: r.PreviousSecretKeyID, PreviousSecretCiphertext: r.PreviousSecretCiphertext,
		PreviousSecretExpiresAt: r.PreviousSecretExpiresAt,
	}, nil
}

// Claim asks for a page of a webhook's due deliveries (its own lane's).
type Claim struct {
	SubscriptionID string
	Limit          int
	// Lease is how long the claimed deliveries stay taken: at least as long
	// as one attempt (a round claims again as attempts end).
	Lease         time.Duration
	WorkflowID    string
	WorkflowRunID string
	// OrderMaxWait bounds how long a delivery waits for an earlier event
	// of its run (per-run order); past it, it goes anyway.
	OrderMaxWait time.Duration
}

// Claimed is a delivery taken for an attempt.
type Claimed struct {
	// Webhook is the webhook it goes to, as it was when it was claimed.
	Webhook     WebhookTarget
	ID          string
	EventID     string
	EventType   string
	JobID       string
	RunID       string
	IsTest      bool
	Attempt     int32 // the number of this attempt, from 1
	MaxAttempts int32
	// Body is the body every attempt sends once fixed (zero until the
	// first attempt fixes it), built from the event (EventData,
	// EventToolName, EventAcceptedAt).
	Body            FixedBody
	EventData       []byte
	EventToolName   string
	EventAcceptedAt time.Time
	// EventTraceParent is the ingestion's traceparent ("" untraced).
	EventTraceParent string
	// Sequence is the delivery's number among its webhook's deliveries of
	// job-run events (webhook-sequence); 0 for a test delivery.
	Sequence int64
	// LeasedUntil is the claim's lease as the database set it: what a
	// release of this claim names (Lease), so it touches only this claim.
	LeasedUntil time.Time
}

// Lease names one claim's lease of a delivery.
type Lease struct {
	DeliveryID string
	Until      time.Time
}

// Lease is the claim's lease of its delivery.
func (c Claimed) Lease() Lease { return Lease{DeliveryID: c.ID, Until: c.LeasedUntil} }

// ClaimDue takes a page of a webhook's due deliveries for its own lane,
// oldest due first.
func (s *Store) ClaimDue(ctx context.Context, c Claim) ([]Claimed, error) {
	rows, err := s.q.ClaimDueDeliveries(ctx, dbq.ClaimDueDeliveriesParams{
		SubscriptionID: c.SubscriptionID, PageSize: int32(c.Limit), LeaseMs: c.Lease.Milliseconds(),
		WorkflowID: c.WorkflowID, WorkflowRunID: c.WorkflowRunID, OrderMaxWaitMs: orderMaxWaitMs(c.OrderMaxWait),
	})
	if err != nil {
		return nil, fmt.Errorf("claim due deliveries of %s: %w", c.SubscriptionID, err)
	}
	out := make([]Claimed, len(rows))
	for i, r := range rows {
		out[i] = claimedOf(r)
	}
	return out, nil
}

// claimedOf is a claimed delivery of a webhook's own lane (ClaimDue,
// ClaimProbe: the same columns).
func claimedOf(r dbq.ClaimDueDeliveriesRow) Claimed {
	return Claimed{
		ID: r.ID, EventID: r.EventID, EventType: r.EventType, JobID: r.JobID, RunID: r.RunID, IsTest: r.IsTest,
		Attempt: r.AttemptCount, MaxAttempts: r.MaxAttempts, Body: FixedBody{Payload: r.Payload, Name: r.BodyName}, EventData: r.EventData,
		EventToolName: r.EventToolName, EventAcceptedAt: r.EventAcceptedAt, EventTraceParent: unpackTraceParent(r.EventTraceParent),
		Sequence: r.Sequence, LeasedUntil: timeOrZero(r.LeasedUntil),
	}
}

// AttemptRecord is the outcome of one attempt, as recorded.
type AttemptRecord struct {
	DeliveryID      string
	SubscriptionID  string
	AttemptNumber   int32
	StartedAt       time.Time // zero: no attempt was made (only the status changes)
	Duration        time.Duration
	StatusCode      int
	ErrorKind       string
	ErrorMessage    string
	ResponseSnippet string
	// Status is the delivery's status after this attempt.
	Status string
	// RetryIn is the wait before the next attempt; ignored when Status is
	// final.
	RetryIn time.Duration
	// Body, when the attempt fixed the body, is that body as it is kept.
	Body FixedBody
	// Probe: the attempt was an open breaker's probe.
	Probe bool
	// Directive is what the receiver asked with its answer (the
	// Webhook-Delivery header): "abort", "disable" or "".
	Directive string
	// ClientURL and SecretVersion are the webhook's as the attempt was
	// sent: a directive binds the webhook only while it still has them.
	ClientURL     string
	SecretVersion int32
	// LeasedUntil is the lease of the claim that made the attempt (zero:
	// none): a record changes its delivery only under that lease, when no
	// claim holds it, or for a success (RecordAttempts).
	LeasedUntil time.Time
}

// AutoDisable deactivates a webhook whose deliveries all failed for After
// with at least MinFailures failed deliveries in a row (After 0: never).
type AutoDisable struct {
	After       time.Duration
	MinFailures int
}

// RecordPolicy is what a record decides for a webhook besides its
// deliveries' outcomes: deactivation and the endpoint breaker.
type RecordPolicy struct {
	AutoDisable AutoDisable
	Breaker     Breaker
}

// WebhookChange is a webhook whose state a record changed: deactivated
// automatically, its breaker opened or closed, its deliveries held (an
// opening, or on_outage changed to "hold" while open), or moved to its
// own lane (an opening in retry mode, or a change to "retry").
type WebhookChange struct {
	SubscriptionID string
	AccountID      int64
	Disabled       bool
	ByReceiver     bool // deactivated at the receiver's request
	BreakerOpened  bool
	BreakerClosed  bool
	Held           bool
	ToOwnLane      bool
}

// RecordAttempts records a group of outcomes (a round writes them in small
// groups as they arrive), across their webhooks, in one write: each
// webhook's latest status from its latest attempt, its failure streaks,
// its deactivation and its breaker under policy; it returns the
// webhooks whose state this write changed. A deadlock (another write took
// the same rows in another order) is retried.
func (s *Store) RecordAttempts(ctx context.Context, recs []AttemptRecord, policy RecordPolicy) ([]WebhookChange, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	n := len(recs)
	p := dbq.RecordAttemptsParams{
		DeliveryIds: make([]string, n), SubscriptionIds: make([]string, n), AttemptNumbers: make([]int32, n),
		StartedAts: make([]time.Time, n), DurationsMs: make([]int32, n), StatusCodes: make([]int32, n),
		ErrorKinds: make([]string, n), ErrorMessages: make([]string, n), Snippets: make([]string, n),
		Statuses: make([]string, n), RetryInsMs: make([]int64, n), Payloads: make([][]byte, n), BodyNames: make([]string, n),
		Outages: make([]int32, n), Probes: make([]bool, n), Leases: make([]time.Time, n),
		DisableAfterMs: policy.AutoDisable.After.Milliseconds(), DisableMinFailures: int32(policy.AutoDisable.MinFailures),
		BreakerThreshold: int32(policy.Breaker.Threshold), ProbeFirstMs: policy.Breaker.ProbeFirst.Milliseconds(),
		ProbeMaxMs: policy.Breaker.ProbeMax.Milliseconds(), DefaultOnOutage: policy.Breaker.onOutage(),
	}
	for i, r := range recs {
		started := r.StartedAt
		if started.IsZero() {
			started = time.Unix(0, 0)
		}
		retryIn := r.RetryIn.Milliseconds()
		if IsFinal(r.Status) {
			retryIn = -1
		}
		p.DeliveryIds[i], p.SubscriptionIds[i], p.AttemptNumbers[i] = r.DeliveryID, r.SubscriptionID, r.AttemptNumber
		p.StartedAts[i], p.DurationsMs[i], p.StatusCodes[i] = started, int32(r.Duration.Milliseconds()), int32(r.StatusCode)
		p.ErrorKinds[i], p.ErrorMessages[i], p.Snippets[i] = r.ErrorKind, storedMessage(r.ErrorMessage), storedSnippet(r.ResponseSnippet)
		p.Statuses[i], p.RetryInsMs[i] = r.Status, max(retryIn, -1)
		p.Payloads[i], p.BodyNames[i] = r.Body.Payload, r.Body.Name
		p.Outages[i], p.Probes[i], p.Leases[i] = outageOf(r), r.Probe, r.LeasedUntil
	}
	var rows []dbq.RecordAttemptsRow
	var err error
	for try := 0; ; try++ {
		// Its generic plan: planning it for each group cost about as much
		// as running it (docs/performance.md, Planning).
		err = s.withGenericIndexPlans(ctx, func(q *dbq.Queries) (err error) {
			rows, err = q.RecordAttempts(ctx, p)
			return err
		})
		if err == nil || !isDeadlock(err) || try == 2 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record %d attempts: %w", n, err)
	}
	var changes []WebhookChange
	for _, r := range rows {
		if r.DisabledNow || r.BreakerOpened || r.BreakerClosed || r.HeldNow || r.ToOwnLane {
			changes = append(changes, WebhookChange{SubscriptionID: r.ID, AccountID: r.AccountID,
				Disabled: r.DisabledNow, BreakerOpened: r.BreakerOpened, BreakerClosed: r.BreakerClosed,
				Held: r.HeldNow, ToOwnLane: r.ToOwnLane})
		}
	}
	return changes, nil
}

// NextDue says when the webhook's next delivery is due (negative: overdue);
// false when nothing is left to deliver.
func (s *Store) NextDue(ctx context.Context, subscriptionID string) (time.Duration, bool, error) {
	rows, err := s.q.NextDue(ctx, subscriptionID)
	if err != nil {
		return 0, false, fmt.Errorf("next due delivery of %s: %w", subscriptionID, err)
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return time.Duration(rows[0]) * time.Millisecond, true, nil
}

// EndPending ends every delivery of the webhook that is not final, in status
// (cancelled: the webhook was deleted; skipped: deactivated).
func (s *Store) EndPending(ctx context.Context, subscriptionID, status, reason string) (int64, error) {
	n, err := s.q.EndPendingDeliveries(ctx, dbq.EndPendingDeliveriesParams{SubscriptionID: subscriptionID, Status: status, Reason: reason})
	if err != nil {
		return 0, fmt.Errorf("cancel deliveries of %s: %w", subscriptionID, err)
	}
	return n, nil
}

// OverdueWebhooks lists at most limit webhooks with a delivery overdue by more
// than grace, with the route that takes it (paused ones are left alone).
func (s *Store) OverdueWebhooks(ctx context.Context, grace time.Duration, limit int) ([]RoutedWebhook, error) {
	rows, err := s.q.OverdueRoutes(ctx, dbq.OverdueRoutesParams{GraceMs: grace.Milliseconds(), MaxWebhooks: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("list overdue webhooks: %w", err)
	}
	out := make([]RoutedWebhook, len(rows))
	for i, r := range rows {
		out[i] = RoutedWebhook{SubscriptionID: r.SubscriptionID, AccountID: r.AccountID, Route: r.Route, LaneKey: int(r.LaneKey)}
	}
	return out, nil
}

// TestRecord is a test delivery's one attempt.
type TestRecord struct {
	DeliveryID     string
	AccountID      int64
	SubscriptionID string
	EventID        string
	EventType      string
	Payload        []byte
	WorkflowID     string
	WorkflowRunID  string
	Attempt        AttemptRecord
}

// RecordTest stores a test delivery with its attempt; recording it again
// changes nothing.
func (s *Store) RecordTest(ctx context.Context, t TestRecord) error {
	a := t.Attempt
	err := s.q.RecordTestAttempt(ctx, dbq.RecordTestAttemptParams{
		DeliveryID: t.DeliveryID, AccountID: t.AccountID, SubscriptionID: t.SubscriptionID, EventID: t.EventID,
		EventType: t.EventType, JobID: "0", RunID: "0", Payload: t.Payload, WorkflowID: t.WorkflowID,
		WorkflowRunID: t.WorkflowRunID, Status: a.Status, StatusCode: int32(a.StatusCode), ErrorMessage: storedMessage(a.ErrorMessage),
		StartedAt: a.StartedAt, DurationMs: int32(a.Duration.Milliseconds()), ErrorKind: a.ErrorKind,
		ResponseSnippet: storedSnippet(a.ResponseSnippet),
	})
	if err != nil {
		return fmt.Errorf("record test delivery %s: %w", t.DeliveryID, err)
	}
	return nil
}

// CreateRedelivery stores a new delivery of a recorded delivery's exact
// body, due now on the shared route (the shard's claim moves it to the
// webhook's route when it has another), and returns its id and the
// webhook to wake (its shard); ENOTFOUND when the original is not the
// account's webhook's.
func (s *Store) CreateRedelivery(ctx context.Context, accountID int64, subscriptionID, originalID string) (string, RoutedWebhook, error) {
	r, err := s.q.CreateRedelivery(ctx, dbq.CreateRedeliveryParams{
		NewID: webhooks.NewDeliveryID(), OriginalID: originalID,
		SubscriptionID: subscriptionID, AccountID: accountID,
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", RoutedWebhook{}, webhooks.Errorf(webhooks.ENOTFOUND, "Delivery %s not found.", originalID)
	}
	if err != nil {
		return "", RoutedWebhook{}, fmt.Errorf("redeliver %s: %w", originalID, err)
	}
	return r.ID, RoutedWebhook{SubscriptionID: subscriptionID, AccountID: accountID, LaneKey: int(r.LaneKey)}, nil
}

// PurgeResult is what one retention run removed.
type PurgeResult struct {
	Partitions int // partitions of delivery records, attempts and events dropped
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

// Backlog counts the deliveries not final, and those of them due now.
func (s *Store) Backlog(ctx context.Context) (due, pending int64, err error) {
	r, err := s.q.DeliveryBacklog(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("count the delivery backlog: %w", err)
	}
	return r.Due, r.Pending, nil
}

// RecordLateAnswer notes on a recorded attempt the answer that came after
// its deadline; false when the attempt is not recorded (yet).
func (s *Store) RecordLateAnswer(ctx context.Context, deliveryID string, attempt int32, statusCode int, after time.Duration) (bool, error) {
	n, err := s.q.RecordLateAnswer(ctx, dbq.RecordLateAnswerParams{
		DeliveryID: deliveryID, AttemptNumber: attempt, StatusCode: ptr(int32(statusCode)), AfterMs: ptr(int32(after.Milliseconds())),
	})
	if err != nil {
		return false, fmt.Errorf("record the late answer to attempt %d of %s: %w", attempt, deliveryID, err)
	}
	return n > 0, nil
}

func ptr[T any](v T) *T { return &v }
