package ui

import (
	"errors"
	"net/http"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
)

// breakerBanner is the webhook page's banner while its endpoint breaker is
// open. Held: its deliveries wait, and one probe goes per backoff step;
// otherwise they keep their retry schedule.
type breakerBanner struct {
	Held         bool
	OpenedAt     time.Time
	OpenedAgo    string     // "12 min ago"
	NextProbeAt  *time.Time // nil when the probe is due
	NextProbe    string     // "in 3 min", "due now"
	Backlog      int64
	FailedProbes int
}

// newBreakerBanner is the banner of b, or nil when its breaker is closed.
func newBreakerBanner(b deliveries.BreakerState, now time.Time) *breakerBanner {
	if !b.Open {
		return nil
	}
	v := &breakerBanner{Held: b.Held, NextProbe: "due now", Backlog: b.Backlog, FailedProbes: b.FailedProbes}
	if b.OpenedAt != nil {
		v.OpenedAt, v.OpenedAgo = *b.OpenedAt, relativeTime(*b.OpenedAt, now)
	}
	if b.NextProbeAt != nil && b.NextProbeAt.After(now) {
		v.NextProbeAt, v.NextProbe = b.NextProbeAt, relativeTime(*b.NextProbeAt, now)
	}
	return v
}

// relativeTime says when t is from now, for people: "in 3 min", "12 min
// ago", "just now".
func relativeTime(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d >= time.Second:
		return "in " + roughDuration(d)
	case d <= -time.Second:
		return roughDuration(-d) + " ago"
	default:
		return "just now"
	}
}

// probeWebhook is Probe now: the next probe of the webhook's open breaker
// goes at once, through the same use case as the API.
func (s *Server) probeWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	id := r.PathValue("webhook_id")
	done := "probing"
	b, err := s.incidents.ProbeNow(r.Context(), a, id)
	switch {
	case errors.Is(err, incidents.ErrBreakerClosed), errors.Is(err, incidents.ErrNotHeld):
		done = "breaker-closed"
	case err != nil:
		return err
	default:
		s.logger.InfoContext(r.Context(), "webhook probe asked for", "account_id", a.Account().ID, "subscription_id", id, "backlog", b.Backlog)
	}
	http.Redirect(w, r, webhookPath(a.Account().ID, id)+"?done="+done, http.StatusSeeOther)
	return nil
}
