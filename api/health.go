package api

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
)

// countsJSON are numbers of the last 24 hours and 7 days.
type countsJSON struct {
	Last24h int64 `json:"last_24h"`
	Last7d  int64 `json:"last_7d"`
}

// webhookHealthJSON is how a webhook's deliveries are going: an object of
// its own, beside the spec's subscription object, which stays unchanged.
type webhookHealthJSON struct {
	WebhookID              string                `json:"webhook_id"`
	Active                 bool                  `json:"active"`
	DisabledAutomatically  bool                  `json:"disabled_automatically"`
	DisabledAt             *string               `json:"disabled_at"`
	DisabledReason         *string               `json:"disabled_reason"`
	FailedDeliveriesInARow int                   `json:"failed_deliveries_in_a_row"`
	FailingSince           *string               `json:"failing_since"`
	LastSuccessAt          *string               `json:"last_success_at"`
	LastFailureAt          *string               `json:"last_failure_at"`
	Deliveries             map[string]countsJSON `json:"deliveries"`
	Attempts               map[string]countsJSON `json:"attempts"`
	SuccessRate24h         *float64              `json:"success_rate_24h"`
	SuccessRate7d          *float64              `json:"success_rate_7d"`
	AttemptDurationP50Ms   int64                 `json:"attempt_duration_p50_ms"`
	AttemptDurationP95Ms   int64                 `json:"attempt_duration_p95_ms"`
	SkippedWhileInactive7d int64                 `json:"skipped_while_inactive_7d"`
	Breaker                breakerJSON           `json:"breaker"`
	InFlight               inFlightJSON          `json:"in_flight"`
	StateChange            stateChangeJSON       `json:"state_change"`
}

// stateChangeJSON is how a webhook that follows its jobs' states
// (notify_on "state_change", or format "pagerduty") sees them: the jobs
// failing now, longest failing first (at most 100 of failing_jobs_total).
// enabled false: it gets every event, and follows no state.
type stateChangeJSON struct {
	Enabled          bool             `json:"enabled"`
	FailingJobs      []failingJobJSON `json:"failing_jobs"`
	FailingJobsTotal int              `json:"failing_jobs_total"`
}

// failingJobJSON is a failing job: since its first failure (the outcome
// delivered as such), and its newest outcome seen.
type failingJobJSON struct {
	JobID         string `json:"job_id"`
	FailingSince  string `json:"failing_since"`
	LastRunID     string `json:"last_run_id"`
	LastOutcomeAt string `json:"last_outcome_at"`
}

func toStateChangeJSON(h deliveries.Health) stateChangeJSON {
	out := stateChangeJSON{Enabled: h.StateChange, FailingJobs: []failingJobJSON{}, FailingJobsTotal: h.FailingJobsTotal}
	for _, j := range h.FailingJobs {
		out.FailingJobs = append(out.FailingJobs, failingJobJSON{JobID: j.JobID, FailingSince: MicrosString(j.FailingSince),
			LastRunID: j.LastRunID, LastOutcomeAt: MicrosString(j.LastOutcomeAt)})
	}
	return out
}

// inFlightJSON is a webhook's adaptive in-flight limit as a worker last
// reported it; limit is the initial one and observed_at null when no worker
// has moved it lately.
type inFlightJSON struct {
	Limit             int     `json:"limit"`
	InFlight          int     `json:"in_flight"`
	UnloadedLatencyMs int64   `json:"unloaded_latency_ms"`
	ObservedAt        *string `json:"observed_at"`
}

// webhookHealth answers GET .../subscription/{webhook_id}/health (read
// permission).
func (s *Server) webhookHealth(c *gin.Context) {
	w, err := s.subscriptionForDeliveries(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	h, err := s.deliveryReads.Health(c.Request.Context(), w)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := webhookHealthJSON{
		WebhookID: w.ID(), Active: h.Active, DisabledAutomatically: h.DisabledAt != nil,
		DisabledAt: microsOrNil(h.DisabledAt), FailedDeliveriesInARow: h.FailedInARow,
		FailingSince: microsOrNil(h.FailingSince), LastSuccessAt: microsOrNil(h.LastSuccessAt),
		LastFailureAt: microsOrNil(h.LastFailureAt), Deliveries: map[string]countsJSON{}, Attempts: map[string]countsJSON{},
		AttemptDurationP50Ms: h.AttemptP50.Milliseconds(), AttemptDurationP95Ms: h.AttemptP95.Milliseconds(),
		SkippedWhileInactive7d: h.Deliveries[deliveries.StatusSkipped].Last7d,
		StateChange:            toStateChangeJSON(h),
	}
	if h.DisabledAt != nil {
		out.DisabledReason = &h.DisabledReason
	}
	for k, v := range h.Deliveries {
		out.Deliveries[k] = countsJSON{Last24h: v.Last24h, Last7d: v.Last7d}
	}
	for k, v := range h.Attempts {
		out.Attempts[k] = countsJSON{Last24h: v.Last24h, Last7d: v.Last7d}
	}
	b, err := s.deliveryReads.Breaker(c.Request.Context(), w)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out.Breaker = toBreakerJSON(b)
	if out.InFlight, err = s.inFlightOf(c, w); err != nil {
		s.writeError(c, err)
		return
	}
	succ, fail := h.Deliveries[deliveries.StatusSucceeded], h.Deliveries[deliveries.StatusFailed]
	out.SuccessRate24h = rate(succ.Last24h, fail.Last24h)
	out.SuccessRate7d = rate(succ.Last7d, fail.Last7d)
	writeData(c, http.StatusOK, out)
}

// rate is the share of settled deliveries that succeeded; nil without any.
func rate(succeeded, failed int64) *float64 {
	if succeeded+failed == 0 {
		return nil
	}
	r := float64(succeeded) / float64(succeeded+failed)
	return &r
}

func microsOrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := MicrosString(*t)
	return &s
}

// inFlightOf is a webhook's in-flight limit for its health object.
func (s *Server) inFlightOf(c *gin.Context, w deliveryreads.Webhook) (inFlightJSON, error) {
	l, ok, err := s.deliveryReads.InFlightLimit(c.Request.Context(), w)
	if err != nil || !ok {
		return inFlightJSON{Limit: min(s.cfg.DeliveryInitialInFlight, s.cfg.DeliveryMaxInFlightPerWebhook)}, err
	}
	return inFlightJSON{Limit: l.Limit, InFlight: l.InFlight, UnloadedLatencyMs: l.UnloadedLatency.Milliseconds(),
		ObservedAt: microsOrNil(&l.ObservedAt)}, nil
}
