// Package activities is everything the delivery workflows do to the world:
// claim due deliveries (shard rounds, webhooks' own lanes), POST signed
// bodies, record outcomes, wake the workflows of overdue deliveries and purge
// old records.
package activities

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/inflight"
	"github.com/jobhooks/jobhooks/secrets"
)

// LaneWaker wakes the workflows that take webhooks' deliveries, by each
// webhook's route: its shard or its own lane (signals them, starting those
// that are not running).
type LaneWaker interface {
	WakeNow(ctx context.Context, lanes []deliveries.RoutedWebhook) error
}

// Deps are the activities' dependencies, passed in explicitly.
type Deps struct {
	Store *deliveries.Store
	// IncidentStore records webhooks' incidents and the notices they send.
	IncidentStore *incidents.Store
	Box           *secrets.Box
	HTTP          *http.Client // from NewHTTPClient
	Logger        *slog.Logger
	// Waker wakes whoever takes a webhook's deliveries: for the sweeper,
	// webhooks a round moved to their own lanes, replays and operators'
	// actions.
	Waker LaneWaker
	// OverdueGrace is how long a delivery may be overdue before the
	// sweeper wakes its shard or lane: longer than a busy one takes to
	// reach it.
	OverdueGrace time.Duration
	// Schedule spaces a failed delivery's attempts.
	Schedule deliveries.Schedule
	// AutoDisable deactivates webhooks whose deliveries keep failing.
	AutoDisable deliveries.AutoDisable
	// ObserveWebhookDisabled, when set, sees every webhook deactivated
	// automatically (metrics).
	ObserveWebhookDisabled func(ctx context.Context, accountID int64, subscriptionID string)
	// Breaker is the endpoint breaker's policy (Threshold 0: off).
	Breaker deliveries.Breaker
	// ObserveBreaker, when set, sees every breaker that opens or closes
	// (metrics).
	ObserveBreaker func(ctx context.Context, accountID int64, subscriptionID string, open bool)
	// OrderMaxWait bounds how long a delivery waits for an earlier event of
	// its run (0: deliveries.DefaultOrderMaxWait).
	OrderMaxWait time.Duration
	// Incidents says when webhooks' incidents are told to their accounts.
	Incidents IncidentPolicy
	// Notices starts the workflows that send account notices (nil: none
	// are sent; they are still recorded).
	Notices NoticeStarter
	// AttemptTimeout bounds one attempt, the response included (spec: 10s).
	AttemptTimeout time.Duration
	// LateAnswerWait is how long after the deadline an attempt keeps
	// listening for the answer, outside any attempt slot, to record it as
	// late (0: not at all).
	LateAnswerWait time.Duration
	// ObserveLateAnswer, when set, sees every late answer (metrics).
	ObserveLateAnswer func(ctx context.Context, o LateAnswerOutcome)
	// Attempts is the worker's pool of attempts in flight, shared fairly
	// between accounts (each holds at most its share).
	Attempts  *fairshare.Pool
	UserAgent string
	// Tracer makes each attempt's span, a child of its event's ingestion
	// (default: no spans).
	Tracer trace.Tracer
	// ObserveLimits, when set, sees the in-flight limits each round
	// reports (metrics).
	ObserveLimits func(ctx context.Context, limits []WebhookLimit)
	// ObserveAttempt, when set, is called once per finished attempt, the one
	// place where an attempt's outcome is known (metrics hook).
	ObserveAttempt func(ctx context.Context, o AttemptOutcome)
	// Now defaults to time.Now.
	Now func() time.Time
	// PurgeBatchSize defaults to DefaultPurgeBatchSize.
	PurgeBatchSize int
	// Tuning shapes rounds (shards and lanes); zero values take defaults.
	Tuning Tuning
	// InFlight holds the worker's in-flight limits per webhook and
	// destination (nil: inflight's defaults, at most Tuning.MaxInFlight a
	// webhook).
	InFlight *inflight.Limits
	// Settings applies webhooks' delivery settings to their attempts.
	Settings SettingsDeps
	// SigningKeys are the accounts' Ed25519 keys every delivery and notice
	// is signed with besides the HMAC (nil: no "v1a" signatures).
	SigningKeys AccountSigningKeys
}

// DefaultMaxConcurrentAttempts is WORKER_MAX_CONCURRENT_DELIVERIES' default.
const DefaultMaxConcurrentAttempts = 1000

// Activities holds the activity methods; register it with the worker.
type Activities struct {
	deps Deps

	keysMu sync.Mutex
	keys   map[cachedKeysID]signingKeys
	// settings caches delivery settings and certificate clients.
	settings settingsState
	// handedOver counts the rounds' attempts still running (an attempt
	// handed over outlives its round) and the outcome writes a round that
	// gave up left behind (Drain waits for them).
	handedOver sync.WaitGroup
	// fences caches webhook states read again before late attempts.
	fences fenceStates
	// ramps count what drains after a breaker closed have sent.
	ramps rampUses
	// limits gates attempts by their webhook's and destination's
	// in-flight limits.
	limits endpointLimits
}

// New returns the activities with their dependencies.
func New(deps Deps) *Activities {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.UserAgent == "" {
		deps.UserAgent = DefaultUserAgent
	}
	if deps.PurgeBatchSize <= 0 {
		deps.PurgeBatchSize = DefaultPurgeBatchSize
	}
	if deps.Attempts == nil {
		deps.Attempts = fairshare.New(DefaultMaxConcurrentAttempts, DefaultMaxConcurrentAttempts/2)
	}
	if deps.Tracer == nil {
		deps.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if deps.OverdueGrace <= 0 {
		deps.OverdueGrace = time.Minute
	}
	if deps.AttemptTimeout <= 0 {
		deps.AttemptTimeout = 10 * time.Second
	}
	deps.Tuning = deps.Tuning.withDefaults()
	if deps.InFlight == nil {
		deps.InFlight = inflight.New(inflight.Options{MaxLimit: deps.Tuning.MaxInFlight})
	}
	return &Activities{deps: deps, keys: map[cachedKeysID]signingKeys{}, settings: newSettingsState(deps.Settings, deps.Now),
		limits: adaptiveLimits{l: deps.InFlight, now: deps.Now}}
}

// Drain waits, at most until ctx ends, for the attempts a's rounds started
// (those handed over included) to finish and be recorded, and for the
// outcome writes of rounds that gave up (a worker's shutdown). A function,
// not a method: every method of Activities is an activity.
func Drain(ctx context.Context, a *Activities) {
	done := make(chan struct{})
	go func() { a.handedOver.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Tuning is how a worker's rounds take and make deliveries.
type Tuning struct {
	// Shards is how many shard workflows share the lane keys
	// (DELIVERY_SHARDS); a shard of another number stops.
	Shards int
	// PageSize bounds the deliveries one claim takes (DELIVERY_PAGE_SIZE).
	PageSize int
	// MaxInFlight bounds a webhook's adaptive in-flight limit (inflight;
	// DELIVERY_MAX_IN_FLIGHT_PER_WEBHOOK), and a slow lane's rounds.
	MaxInFlight int
	// Linger is how long a round keeps looking for newly due deliveries
	// before it returns (DELIVERY_LANE_LINGER).
	Linger time.Duration
	// LaneIdle is how long a webhook's own lane waits with nothing pending
	// before the webhook goes back to its shard (DELIVERY_LANE_IDLE_TIMEOUT).
	LaneIdle time.Duration
	// Patience is how long an attempt of a shared round may run: one still
	// running then is handed over and its webhook gets its own lane
	// (DELIVERY_SHARED_PATIENCE).
	Patience time.Duration
}

func (t Tuning) withDefaults() Tuning {
	if t.Shards <= 0 {
		t.Shards = 2
	}
	if t.PageSize <= 0 {
		t.PageSize = 200
	}
	if t.MaxInFlight <= 0 {
		t.MaxInFlight = inflight.DefaultMaxLimit
	}
	if t.LaneIdle <= 0 {
		t.LaneIdle = time.Minute
	}
	if t.Patience <= 0 {
		t.Patience = 500 * time.Millisecond
	}
	return t
}

// DefaultUserAgent identifies deliveries to receivers.
const DefaultUserAgent = "jobhooks/1.0"

// LateAnswerOutcome is an answer that came after an attempt's deadline.
type LateAnswerOutcome struct {
	DeliveryID     string
	SubscriptionID string
	EventType      string
	Attempt        int32
	StatusCode     int
	After          time.Duration
}

// AttemptOutcome describes one finished attempt, for observers (metrics).
type AttemptOutcome struct {
	DeliveryID     string
	SubscriptionID string
	AccountID      int64
	EventType      string
	Attempt        int32
	StatusCode     int
	ErrorKind      string // "" on success
	Duration       time.Duration
	DeliveryStatus string // after this attempt
	// SinceEvent is the time from the event's acceptance by the API to the
	// end of this attempt; zero when unknown (tests, redeliveries).
	SinceEvent time.Duration
}
