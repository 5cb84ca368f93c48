// Package activities is everything the delivery workflows do to the world:
// claim due deliveries (shard rounds, webhooks' own lanes), POST signed
// bodies, record outcomes, change routes, send notices, wake the workflows
// of overdue deliveries and purge old records.
package activities

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/fairshare"
	"github.com/jobhooks/jobhooks/goroutines"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/inflight"
	"github.com/jobhooks/jobhooks/secrets"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Deps are every dependency of a worker's activities, passed in
// explicitly; New hands each type the ones it uses.
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
	Waker Waker
	// OverdueGrace is how long a delivery may be overdue before the
	// sweeper wakes its shard or own lane: longer than a busy one takes to
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
	// Tuning shapes rounds (shards' and own lanes'); zero values take
	// defaults.
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
const DefaultMaxConcurrentAttempts = 2000

// Set is a worker's activities, one value of each type. New builds them
// over one set of the worker's caches (opened secrets, delivery settings,
// fences, in-flight limits, drain ramps), so each cache is one per worker
// whichever activity uses it. Register every field with the worker.
type Set struct {
	Rounds         *Rounds
	Routes         *Routes
	Notices        *Notices
	Maintenance    *Maintenance
	Replays        *Replays
	TestDeliveries *TestDeliveries
}

// attemptGoroutineIdle is how long a goroutine that ran an attempt (or
// its request) waits for another before it ends: a burst's goroutines
// serve the next one with their stacks grown.
const attemptGoroutineIdle = 30 * time.Second

// New returns the activities with their dependencies.
func New(deps Deps) *Set {
	deps = deps.withDefaults()
	wake := wakeups{waker: deps.Waker, logger: deps.Logger}
	send := &sender{
		keys:     &keyCache{box: deps.Box, logger: deps.Logger, keys: map[cachedKeysID]signingKeys{}},
		settings: newSettingsState(deps.Settings, deps.Now, deps.Logger), signingKeys: deps.SigningKeys,
		http: deps.HTTP, attempts: deps.Attempts, goroutines: goroutines.New(attemptGoroutineIdle), userAgent: deps.UserAgent,
		attemptTimeout: deps.AttemptTimeout, lateAnswerWait: deps.LateAnswerWait, logger: deps.Logger, now: deps.Now,
	}
	observer := &attemptObserver{store: deps.Store, tracer: deps.Tracer, logger: deps.Logger, now: deps.Now,
		observeAttempt: deps.ObserveAttempt, observeLateAnswer: deps.ObserveLateAnswer}
	incidents := &incidentFollowUp{store: deps.IncidentStore, policy: deps.Incidents, notices: deps.Notices,
		logger: deps.Logger, now: deps.Now}
	rounds := &Rounds{
		store: deps.Store, logger: deps.Logger, now: deps.Now, tuning: deps.Tuning, attemptTimeout: deps.AttemptTimeout,
		orderMaxWait: deps.OrderMaxWait, schedule: deps.Schedule, breaker: deps.Breaker,
		attempts: deps.Attempts, observeLimits: deps.ObserveLimits,
		send: send, observer: observer, incidents: incidents, wake: wake,
		outcomes: &outcomeWriter{store: deps.Store, logger: deps.Logger, now: deps.Now, autoDisable: deps.AutoDisable,
			breaker: deps.Breaker, observeWebhookDisabled: deps.ObserveWebhookDisabled, observeBreaker: deps.ObserveBreaker,
			incidents: incidents, wake: wake, observer: observer, kept: &keptOutcomes{}},
		fences:    &fenceStates{store: deps.Store, now: deps.Now},
		ramps:     &rampUses{store: deps.Store, breaker: deps.Breaker, now: deps.Now},
		limits:    adaptiveLimits{l: deps.InFlight, now: deps.Now},
		answers:   &answerTimes{},
		laneWakes: newLaneWakes(),
	}
	rounds.handed = &handedWrites{rs: rounds}
	return &Set{
		Rounds:  rounds,
		Routes:  &Routes{store: deps.Store, wake: wake},
		Notices: &Notices{store: deps.IncidentStore, box: deps.Box, send: send, now: deps.Now},
		Maintenance: &Maintenance{store: deps.Store, waker: deps.Waker, incidents: incidents, logger: deps.Logger, now: deps.Now,
			overdueGrace: deps.OverdueGrace},
		Replays:        &Replays{store: deps.Store, waker: deps.Waker, logger: deps.Logger},
		TestDeliveries: &TestDeliveries{store: deps.Store, send: send, observer: observer},
	}
}

// withDefaults fills what deps leave out.
func (deps Deps) withDefaults() Deps {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.UserAgent == "" {
		deps.UserAgent = DefaultUserAgent
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
	return deps
}

// DefaultUserAgent identifies deliveries to receivers.
const DefaultUserAgent = "jobhooks/1.0"
