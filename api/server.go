// Package api is the HTTP face of the service: Gin routes, middleware, and the
// wire types of the v2/v3 REST API and the internal ingestion endpoint.
package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/admin"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/dispatch"
	"github.com/jobhooks/jobhooks/feed"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/listeners"
	"github.com/jobhooks/jobhooks/signingkeys"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/telemetry"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// MaxBodyBytes is the largest request body the API reads.
const MaxBodyBytes = 1 << 20

// Deps are everything the API needs, passed in explicitly.
type Deps struct {
	Config    config.Config
	Logger    *slog.Logger
	Identity  *identity.Store
	Readiness []admin.Check
	// UI is the web UI (package ui), served under /ui; nil serves none.
	UI http.Handler
	// Subscriptions is the webhook subscription use cases (v3 API), the
	// same the web UI calls.
	Subscriptions *subscriptions.Service
	// Deliveries ingests events, sends test deliveries, redeliveries and
	// replays. Only tests that use none of those endpoints leave it nil.
	Deliveries *dispatch.Service
	// DeliveryReads reads Recent Deliveries, the delivery search, a
	// webhook's health and replays; it is set exactly when Deliveries is.
	DeliveryReads *deliveryreads.Service
	// Listeners opens listeners (webhooks listen), hands them their
	// webhooks' deliveries and relays the worker's requests to them; nil
	// answers 503 on those routes (listening is off).
	Listeners *listeners.Service
	// DeliverySettings is a webhook's rate limit, custom headers and client
	// certificate, the same use cases the web UI calls; nil answers 503 on
	// its routes.
	DeliverySettings *webhooksettings.Service
	// Feed lists webhooks' numbered deliveries with their signed bodies;
	// nil answers 503 on its route.
	Feed *feed.Service
	// Incidents reads and probes webhooks' breakers, and keeps the
	// account's notification endpoint and notices; nil answers 503 on
	// those routes.
	Incidents *incidents.Service
	// SigningKeys lists, rotates and publishes accounts' Ed25519 signing
	// keys; nil answers 503 on those routes.
	SigningKeys *signingkeys.Service
	// Telemetry, when not nil, puts every request in a trace (continuing an
	// incoming traceparent) and records the HTTP server metrics.
	Telemetry *telemetry.Telemetry
}

// Server holds the dependencies the handlers use.
type Server struct {
	cfg       config.Config
	logger    *slog.Logger
	identity  *identity.Store
	readiness []admin.Check
	ui        http.Handler

	subscriptions    *subscriptions.Service
	deliveries       *dispatch.Service
	deliveryReads    *deliveryreads.Service
	listeners        *listeners.Service
	deliverySettings *webhooksettings.Service
	incidents        *incidents.Service
	signingKeys      *signingkeys.Service
	feed             *feed.Service
}

// NewServer returns the API as an http.Handler. Logger, Identity and
// Subscriptions are required, and Deliveries and DeliveryReads come
// together; otherwise it returns an error.
func NewServer(deps Deps) (http.Handler, error) {
	if deps.Logger == nil || deps.Identity == nil || deps.Subscriptions == nil {
		return nil, errors.New("api: Logger, Identity and Subscriptions are required")
	}
	if (deps.Deliveries == nil) != (deps.DeliveryReads == nil) {
		return nil, errors.New("api: Deliveries and DeliveryReads go together")
	}
	return trimTrailingSlash(newEngine(deps)), nil
}

// Routes lists every route NewServer(deps) registers (the OpenAPI test
// compares them with the document).
func Routes(deps Deps) gin.RoutesInfo {
	return newEngine(deps).Routes()
}

// newEngine builds this server's own gin engine. Gin's process-wide mode
// only governs its debug printing, and is main's business.
func newEngine(deps Deps) *gin.Engine {
	s := &Server{
		cfg:       deps.Config,
		logger:    deps.Logger,
		identity:  deps.Identity,
		readiness: deps.Readiness,
		ui:        deps.UI,

		subscriptions:    deps.Subscriptions,
		deliveries:       deps.Deliveries,
		deliveryReads:    deps.DeliveryReads,
		listeners:        deps.Listeners,
		deliverySettings: deps.DeliverySettings,
		incidents:        deps.Incidents,
		signingKeys:      deps.SigningKeys,
		feed:             deps.Feed,
	}
	engine := gin.New()
	engine.RedirectTrailingSlash = false
	engine.RedirectFixedPath = false
	engine.HandleMethodNotAllowed = true
	engine.ContextWithFallback = true
	if deps.Telemetry != nil {
		engine.Use(traced(deps.Telemetry)...)
	}
	engine.Use(s.recoverPanics(), s.limitBody())
	s.routes(engine)
	return engine
}

// trimTrailingSlash lets every route answer with and without a trailing
// slash (clients use both) without redirects, which would drop POST bodies.
func trimTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimRight(p, "/")
			if r.URL.Path == "" {
				r.URL.Path = "/"
			}
			r.URL.RawPath = ""
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

func (s *Server) readyz(c *gin.Context) {
	ready, checks := admin.RunChecks(c.Request.Context(), s.readiness, s.logger)
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	c.JSON(code, gin.H{"ready": ready, "checks": checks})
}
