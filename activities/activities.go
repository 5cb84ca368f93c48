// Package activities is everything the delivery workflows do to the world:
// match subscriptions and start deliveries, POST signed payloads, record
// outcomes, purge old records.
package activities

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/secrets"
)

// Deps are the activities' dependencies, passed in explicitly.
type Deps struct {
	Store     *deliveries.Store
	Service   *deliveries.Service
	Box       *secrets.Box
	HTTP      *http.Client // from NewHTTPClient
	Logger    *slog.Logger
	UserAgent string
	// ObserveAttempt, when set, is called once per finished attempt, the one
	// place where an attempt's outcome is known (metrics hook).
	ObserveAttempt func(ctx context.Context, o AttemptOutcome)
	// Now defaults to time.Now.
	Now func() time.Time
	// PurgeBatchSize defaults to DefaultPurgeBatchSize.
	PurgeBatchSize int
	// MaxConcurrentAttempts bounds the attempts this process makes at once,
	// whether one per local activity or a page of first attempts in one
	// (default DefaultMaxConcurrentAttempts).
	MaxConcurrentAttempts int
}

// DefaultMaxConcurrentAttempts is WORKER_MAX_CONCURRENT_DELIVERIES' default.
const DefaultMaxConcurrentAttempts = 200

// Activities holds the activity methods; register it with the worker.
type Activities struct {
	deps  Deps
	slots *semaphore.Weighted // one per attempt in flight
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
	if deps.MaxConcurrentAttempts <= 0 {
		deps.MaxConcurrentAttempts = DefaultMaxConcurrentAttempts
	}
	return &Activities{deps: deps, slots: semaphore.NewWeighted(int64(deps.MaxConcurrentAttempts))}
}

// DefaultUserAgent identifies deliveries to receivers.
const DefaultUserAgent = "jobhooks/1.0"

// Header names of a delivery besides Content-Type and Authorization.
const (
	HeaderDeliveryID = "Webhook-Delivery-Id" // wdl_..., the same on every retry
	HeaderEventID    = "Webhook-Event-Id"    // wev_...
	HeaderAttempt    = "Webhook-Attempt"     // 1..6
)
