package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/deliveries"
)

// breakerJSON is a webhook's endpoint breaker: an object of its own, beside
// the spec's subscription object, which stays unchanged. Timestamps are
// microseconds since the epoch as digit strings, or null.
type breakerJSON struct {
	WebhookID string `json:"webhook_id"`
	State     string `json:"state"` // closed or open
	// DeliveriesHeld: the open breaker holds the webhook's deliveries
	// (on_outage "hold"); false, they keep their retry schedule.
	DeliveriesHeld      bool    `json:"deliveries_held"`
	OpenedAt            *string `json:"opened_at"`
	NextProbeAt         *string `json:"next_probe_at"`
	FailedProbes        int     `json:"failed_probes"`
	FailuresInARow      int     `json:"failures_in_a_row"`
	Backlog             int64   `json:"backlog"`
	LastClosedAt        *string `json:"last_closed_at"`
	IncidentStartedAt   *string `json:"incident_started_at"`
	IncidentAnnouncedAt *string `json:"incident_announced_at"`
}

// Breaker states on the wire.
const (
	breakerClosed = "closed"
	breakerOpen   = "open"
)

func toBreakerJSON(b deliveries.BreakerState) breakerJSON {
	out := breakerJSON{
		WebhookID: b.SubscriptionID, State: breakerClosed, FailedProbes: b.FailedProbes, FailuresInARow: b.FailuresInARow,
		Backlog: b.Backlog, LastClosedAt: microsOrNil(b.ClosedAt), IncidentStartedAt: microsOrNil(b.IncidentStartedAt),
		IncidentAnnouncedAt: microsOrNil(b.IncidentAnnouncedAt),
	}
	if b.Open {
		out.State, out.OpenedAt, out.NextProbeAt = breakerOpen, microsOrNil(b.OpenedAt), microsOrNil(b.NextProbeAt)
		out.DeliveriesHeld = b.Held
	}
	return out
}

// getBreaker answers GET .../subscription/{webhook_id}/breaker (read
// permission).
func (s *Server) getBreaker(c *gin.Context) {
	a, id, err := s.webhookTarget(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.incidents.Breaker(c.Request.Context(), a, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toBreakerJSON(b))
}

// probeBreaker answers POST .../subscription/{webhook_id}/breaker/probe
// (write permission): the next probe goes now; 409 when the breaker is
// not open.
func (s *Server) probeBreaker(c *gin.Context) {
	a, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	b, err := s.incidents.ProbeNow(c.Request.Context(), a, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook probe asked for",
		"account_id", a.Account().ID, "subscription_id", id, "backlog", b.Backlog)
	writeData(c, http.StatusAccepted, toBreakerJSON(b))
}
