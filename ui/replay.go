package ui

import (
	"fmt"
	"net/http"
	"time"

	"github.com/jobhooks/jobhooks/deliveries"
)

// missedWindow is how far back the web UI offers to send missed
// deliveries again.
const missedWindow = 7 * 24 * time.Hour

// missedStatuses are what "missed" means: skipped while inactive, failed.
var missedStatuses = []string{deliveries.StatusSkipped, deliveries.StatusFailed}

type replayConfirmView struct {
	webhookDetailView
	Count int
	Since time.Time
}

// replayConfirm says how many missed deliveries of the last 7 days would
// be sent, before anything is.
func (s *Server) replayConfirm(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, wh, err := s.loadWebhookDeliveries(r, sess, true)
	if err != nil {
		return err
	}
	since := time.Now().Add(-missedWindow)
	n, err := s.reads.CountReplayable(r.Context(), wh, since, missedStatuses)
	if err != nil {
		return err
	}
	acct := a.Account()
	return s.render(w, r, http.StatusOK, "webhook_replay", sess, &replayConfirmView{
		webhookDetailView: webhookDetailView{layoutView: s.layout(sess, "Send missed deliveries of "+sub.Name, &acct, "webhooks"), CanWrite: true, Sub: sub},
		Count:             n, Since: since,
	})
}

// replay starts the replay through the same service as the API.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	_, n, err := s.deliveries.Replay(r.Context(), a.Account().ID, sub.ID, time.Now().Add(-missedWindow), nil, missedStatuses)
	if err != nil {
		return err
	}
	http.Redirect(w, r, webhookPath(a.Account().ID, sub.ID)+"?done=replaying&n="+fmt.Sprint(n), http.StatusSeeOther)
	return nil
}
