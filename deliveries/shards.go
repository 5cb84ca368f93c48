package deliveries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/inflight"
)

// SharedClaim asks for a page of a shard's due deliveries.
type SharedClaim struct {
	Shard, Shards int
	// PerKey bounds the candidates read from each lane key; PerWebhook the
	// deliveries one webhook gets in the page; Limit the page.
	PerKey, PerWebhook, Limit int
	// Lease is how long the claimed deliveries stay taken: at least as long
	// as one attempt.
	Lease         time.Duration
	WorkflowID    string
	WorkflowRunID string
	// OrderMaxWait: as Claim's.
	OrderMaxWait time.Duration
	// Rooms bounds, per webhook, the deliveries this page may take: what
	// its in-flight limit lets start now (0: none). Webhooks not listed
	// take at most PerWebhook.
	Rooms map[string]int
	// DestinationRooms does the same per destination (by DestinationKey);
	// destinations not listed take at most PerDestination (0: no bound).
	DestinationRooms map[string]int
	PerDestination   int
}

// DestinationKey is how a claim groups webhooks by destination: the
// account's, at the client_url's destination as the worker's limiter
// names it (inflight.Destination: scheme://host:port, lowercased, the
// default port explicit); migration 00027 stores the same for each
// webhook. Destinations are per account, so one account's receiver that
// refuses or hangs never uses up another account's capacity at the same
// host.
func DestinationKey(accountID int64, clientURL string) string {
	return strconv.FormatInt(accountID, 10) + " " + inflight.Destination(clientURL)
}

// ClaimedPage is what a shared claim took, and what it put in order on the
// way: deliveries ended because their webhook was deactivated or deleted,
// and webhooks whose deliveries it moved to their own lane (route own),
// for the round to wake. Those it moved to a pause or a hold are not
// listed: nobody takes them now.
type ClaimedPage struct {
	Claimed    []Claimed
	Ended      []string
	MovedToOwn []RoutedWebhook
	// More: the claim may have left due deliveries behind (a room, the
	// page or a full window held some back); without it, it took all
	// that was due.
	More bool
	// ConnectionWait is how long the claim waited for a connection before
	// its statement was sent: its leases and the webhooks it read start no
	// earlier than that after the call.
	ConnectionWait time.Duration
}

// ClaimShared takes a page of a shard's due deliveries across its webhooks,
// in turns by account (see the ClaimShared query).
func (s *Store) ClaimShared(ctx context.Context, c SharedClaim) (ClaimedPage, error) {
	lo, hi := ShardKeys(c.Shard, c.Shards)
	perDestination := c.PerDestination
	if perDestination <= 0 {
		perDestination = c.Limit // no destination bound
	}
	var rows []dbq.ClaimSharedRow
	waited, err := s.withGenericIndexPlansWaited(ctx, func(q *dbq.Queries) (err error) {
		rows, err = q.ClaimShared(ctx, dbq.ClaimSharedParams{
			Lo: int32(lo), Hi: int32(hi), PerKey: int64(c.PerKey), PerWebhook: int64(c.PerWebhook),
			Rooms: roomsObject(c.Rooms), DestRooms: roomsObject(c.DestinationRooms), PerDestination: int64(perDestination),
			PageSize: int64(c.Limit), LeaseMs: c.Lease.Milliseconds(), WorkflowID: c.WorkflowID,
			WorkflowRunID: c.WorkflowRunID, OrderMaxWaitMs: orderMaxWaitMs(c.OrderMaxWait),
		})
		return err
	})
	if err != nil {
		return ClaimedPage{}, fmt.Errorf("claim due deliveries of shard %d/%d: %w", c.Shard, c.Shards, err)
	}
	// Oldest due first: a webhook's attempts start in this order (a run's
	// job.run.started then goes before the run's other events: orderRuns).
	slices.SortStableFunc(rows, func(a, b dbq.ClaimSharedRow) int {
		if c := timeOrZero(a.DueAt).Compare(timeOrZero(b.DueAt)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	page := ClaimedPage{ConnectionWait: waited}
	moved := map[string]bool{}
	for _, r := range rows {
		switch r.Kind {
		case "more":
			page.More = true
		case "ended":
			page.Ended = append(page.Ended, r.ID)
		case "moved":
			if !moved[r.SubscriptionID] {
				moved[r.SubscriptionID] = true
				page.MovedToOwn = append(page.MovedToOwn, RoutedWebhook{SubscriptionID: r.SubscriptionID, AccountID: r.AccountID, Route: RouteOwn})
			}
		default:
			page.Claimed = append(page.Claimed, Claimed{
				Webhook: WebhookTarget{
					ID: r.SubscriptionID, AccountID: r.AccountID, Name: r.Name, ClientURL: r.ClientUrl, Active: true,
					Route: RouteShared, SecretVersion: r.SecretVersion, SecretKeyID: r.SecretKeyID,
					SecretCiphertext: r.SecretCiphertext, PreviousSecretKeyID: r.PreviousSecretKeyID,
					PreviousSecretCiphertext: r.PreviousSecretCiphertext, PreviousSecretExpiresAt: r.PreviousSecretExpiresAt,
				},
				ID: r.ID, EventID: r.EventID, EventType: r.EventType, JobID: r.JobID, RunID: r.RunID, IsTest: r.IsTest,
				Attempt: r.AttemptCount, MaxAttempts: r.MaxAttempts, Body: FixedBody{Payload: r.Payload, Name: r.BodyName}, EventData: r.EventData,
				EventToolName: r.EventToolName, EventAcceptedAt: r.EventAcceptedAt, EventTraceParent: unpackTraceParent(r.EventTraceParent),
				Sequence: r.Sequence, LeasedUntil: timeOrZero(r.LeasedUntil),
			})
		}
	}
	if len(page.Ended) > 0 {
		// Skipped deliveries keep the body that would have been sent; one
		// that cannot be built now gets it when it is sent again.
		_ = s.FixBodies(ctx, page.Ended)
	}
	orderRuns(page.Claimed)
	return page, nil
}

// roomsObject writes rooms as the JSON object the claim looks keys up in
// (negative rooms as 0).
func roomsObject(m map[string]int) []byte {
	rooms := make(map[string]int, len(m))
	for k, room := range m {
		rooms[k] = max(room, 0)
	}
	b, _ := json.Marshal(rooms) // a map of strings to ints always encodes
	return b
}

// ReleaseClaims gives back claimed deliveries whose attempt never started:
// the attempt is not counted and they are due again at once. Each only
// while its claim's lease holds (a later claim's is never touched); it
// returns how many were given back.
func (s *Store) ReleaseClaims(ctx context.Context, leases []Lease) (int64, error) {
	if len(leases) == 0 {
		return 0, nil
	}
	p := dbq.ReleaseClaimsParams{Ids: make([]string, len(leases)), Leases: make([]time.Time, len(leases))}
	for i, l := range leases {
		p.Ids[i], p.Leases[i] = l.DeliveryID, l.Until
	}
	n, err := s.q.ReleaseClaims(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("release %d claims: %w", len(leases), err)
	}
	return n, nil
}

// NextDueShared says when the shard's next delivery is due (negative:
// overdue); false when it has none pending.
func (s *Store) NextDueShared(ctx context.Context, shard, shards int) (time.Duration, bool, error) {
	lo, hi := ShardKeys(shard, shards)
	rows, err := s.q.NextDueShared(ctx, dbq.NextDueSharedParams{Lo: int32(lo), Hi: int32(hi)})
	if err != nil {
		return 0, false, fmt.Errorf("next due delivery of shard %d/%d: %w", shard, shards, err)
	}
	if len(rows) == 0 {
		return 0, false, nil
	}
	return time.Duration(rows[0]) * time.Millisecond, true, nil
}

// PromiseShardClaims records that the shard's current round claims for
// at least d from now, on the database's clock: a delivery committed
// before then needs no wake-up of the shard (ShardClaimPromises). The
// round must then go on claiming until d after this returns, and look for
// due work once more after that.
func (s *Store) PromiseShardClaims(ctx context.Context, shard, shards int, d time.Duration) error {
	err := s.q.PromiseShardClaims(ctx, dbq.PromiseShardClaimsParams{Shards: int32(shards), Shard: int32(shard), ForMs: d.Milliseconds()})
	if err != nil {
		return fmt.Errorf("promise the claims of shard %d/%d: %w", shard, shards, err)
	}
	return nil
}

// BeginShardRound counts a round of the shard as begun; a round calls it
// before its first claim, so a commit the count's reader saw no new round
// for is claimed by the next (dispatch.Waker).
func (s *Store) BeginShardRound(ctx context.Context, shard, shards int) error {
	if err := s.q.BeginShardRound(ctx, dbq.BeginShardRoundParams{Shards: int32(shards), Shard: int32(shard)}); err != nil {
		return fmt.Errorf("begin a round of shard %d/%d: %w", shard, shards, err)
	}
	return nil
}

// ShardRoundsBegun is how many rounds the shard has begun (BeginShardRound).
func (s *Store) ShardRoundsBegun(ctx context.Context, shard, shards int) (int64, error) {
	n, err := s.q.ShardRoundsBegun(ctx, dbq.ShardRoundsBegunParams{Shards: int32(shards), Shard: int32(shard)})
	if err != nil {
		return 0, fmt.Errorf("read the rounds shard %d/%d began: %w", shard, shards, err)
	}
	return n, nil
}

// ShardClaimPromises says, by shard of shards, how long each shard's round
// still promises to claim (PromiseShardClaims), counted from when the
// statement started, so no earlier than the call: a delivery committed
// before the call's start plus that time is claimed without a wake-up.
// Shards without a promise are left out.
func (s *Store) ShardClaimPromises(ctx context.Context, shards int) (map[int]time.Duration, error) {
	rows, err := s.q.ShardClaimPromises(ctx, int32(shards))
	if err != nil {
		return nil, fmt.Errorf("read the shards' claim promises: %w", err)
	}
	promises := make(map[int]time.Duration, len(rows))
	for _, r := range rows {
		promises[int(r.Shard)] = time.Duration(r.RemainingUs) * time.Microsecond
	}
	return promises, nil
}

// RouteChange moves webhooks from one of the routes From to route To, with
// their pending deliveries. Every From must have a transition to To in
// Transitions.
type RouteChange struct {
	IDs    []string
	From   []string
	To     string
	Reason string
}

// Moved is a webhook a route change moved.
type Moved struct {
	RoutedWebhook
	HasPending bool // it has deliveries not final, now on the new route
}

// SetRoute moves the webhooks of c that are on one of c.From to c.To and
// returns those it moved. A change that Transitions does not hold is an
// RouteChangeError, and nothing is written; one the table allows only
// without a rate limit leaves rate-limited webhooks where they are.
func (s *Store) SetRoute(ctx context.Context, c RouteChange) ([]Moved, error) {
	if _, err := c.gate(); err != nil || len(c.IDs) == 0 {
		return nil, err
	}
	var moved []Moved
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		moved, err = SetRouteIn(ctx, tx, c)
		return err
	})
	return moved, err
}

// SetRouteIn is SetRoute in the caller's transaction (the delivery
// settings' write sets a rate limit and the route that keeps it in one
// commit). It locks the webhooks' rows first, so the move sees what
// committed while it waited (see LockWebhookRoutes).
func SetRouteIn(ctx context.Context, tx pgx.Tx, c RouteChange) ([]Moved, error) {
	noRateLimit, err := c.gate()
	if err != nil || len(c.IDs) == 0 {
		return nil, err
	}
	q := dbq.New(tx)
	if err := q.LockWebhookRoutes(ctx, c.IDs); err != nil {
		return nil, fmt.Errorf("lock %d webhooks to change their route: %w", len(c.IDs), err)
	}
	rows, err := q.SetWebhookRoute(ctx, dbq.SetWebhookRouteParams{
		Ids: c.IDs, FromRoutes: c.From, ToRoute: c.To, Reason: c.Reason, NoRateLimit: noRateLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("move %d webhooks to route %s: %w", len(c.IDs), c.To, err)
	}
	out := make([]Moved, len(rows))
	for i, r := range rows {
		out[i] = Moved{RoutedWebhook: RoutedWebhook{SubscriptionID: r.ID, AccountID: r.AccountID, Route: c.To, LaneKey: int(r.LaneKey)}, HasPending: r.HasPending}
	}
	return out, nil
}

// WebhookRoute is a webhook's route and why it is on it.
type WebhookRoute struct {
	ID        string
	AccountID int64
	Route     string
	Reason    string
	Since     *time.Time
	Active    bool
	Deleted   bool
	LaneKey   int // webhook_subscriptions.lane_key
}

// Route returns a webhook's route, or ErrSubscriptionGone.
func (s *Store) Route(ctx context.Context, subscriptionID string) (WebhookRoute, error) {
	r, err := s.q.WebhookRoute(ctx, subscriptionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookRoute{}, ErrSubscriptionGone
	}
	if err != nil {
		return WebhookRoute{}, fmt.Errorf("load the route of %s: %w", subscriptionID, err)
	}
	return WebhookRoute{ID: r.ID, AccountID: r.AccountID, Route: r.DeliveryRoute, Reason: r.RouteReason,
		Since: r.RouteChangedAt, Active: r.Active, Deleted: r.Deleted, LaneKey: int(r.LaneKey)}, nil
}

// AttemptRef names one attempt of a delivery.
type AttemptRef struct {
	DeliveryID string
	Attempt    int32
}

// RecordedAttempt is an attempt's recorded outcome and its delivery's
// status after it.
type RecordedAttempt struct {
	AttemptRef
	StatusCode     int
	ErrorKind      string
	ErrorMessage   string
	Duration       time.Duration
	DeliveryStatus string
	RetryIn        time.Duration
}

// RecordedAttempts returns the recorded outcomes of the attempts among refs
// that are recorded.
func (s *Store) RecordedAttempts(ctx context.Context, refs []AttemptRef) ([]RecordedAttempt, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	p := dbq.AttemptOutcomesParams{DeliveryIds: make([]string, len(refs)), AttemptNumbers: make([]int32, len(refs))}
	for i, r := range refs {
		p.DeliveryIds[i], p.AttemptNumbers[i] = r.DeliveryID, r.Attempt
	}
	rows, err := s.q.AttemptOutcomes(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("load %d recorded attempts: %w", len(refs), err)
	}
	out := make([]RecordedAttempt, len(rows))
	for i, r := range rows {
		out[i] = RecordedAttempt{
			AttemptRef: AttemptRef{DeliveryID: r.DeliveryID, Attempt: r.AttemptNumber}, StatusCode: int(r.StatusCode),
			ErrorKind: r.ErrorKind, ErrorMessage: r.ErrorMessage, Duration: time.Duration(r.DurationMs) * time.Millisecond,
			DeliveryStatus: r.Status, RetryIn: time.Duration(r.RetryDelayMs) * time.Millisecond,
		}
	}
	return out, nil
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// isDeadlock reports whether err is PostgreSQL's deadlock_detected.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
