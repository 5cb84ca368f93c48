package ui

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// webhooksPageSize is how many subscriptions the list shows per page.
const webhooksPageSize = 20

func webhooksPath(accountID int64) string {
	return fmt.Sprintf("/ui/accounts/%d/webhooks", accountID)
}

func webhookPath(accountID int64, id string) string {
	return fmt.Sprintf("/ui/accounts/%d/webhooks/%s", accountID, id)
}

// webhookRoutes lists the pages of Account Settings › Webhooks.
func (s *Server) webhookRoutes() {
	if s.subscriptions == nil {
		return
	}
	const base = "/ui/accounts/{account_id}/webhooks"
	s.mux.Handle("GET "+base, s.page(s.webhookList))
	s.mux.Handle("GET "+base+"/new", s.page(s.newWebhookForm))
	s.mux.Handle("POST "+base, s.page(s.createWebhook))
	s.mux.Handle("GET "+base+"/{webhook_id}", s.page(s.webhookDetail))
	s.mux.Handle("GET "+base+"/{webhook_id}/edit", s.page(s.editWebhookForm))
	s.mux.Handle("POST "+base+"/{webhook_id}", s.page(s.updateWebhook))
	s.mux.Handle("POST "+base+"/{webhook_id}/active", s.page(s.setWebhookActive))
	s.mux.Handle("GET "+base+"/{webhook_id}/delete", s.page(s.deleteWebhookConfirm))
	s.mux.Handle("POST "+base+"/{webhook_id}/delete", s.page(s.deleteWebhook))
	s.mux.Handle("GET "+base+"/{webhook_id}/secret/rotate", s.page(s.rotateSecretConfirm))
	s.mux.Handle("POST "+base+"/{webhook_id}/secret/rotate", s.page(s.rotateSecret))
	s.deliveryRoutes(base + "/{webhook_id}")
	s.deliverySettingsRoutes(base + "/{webhook_id}")
	if s.incidents != nil {
		s.incidentRoutes(base)
	}
}

// accountAccess is the caller's access to the page's account, by the same
// rules as the API; write requires the right to change webhooks as well.
func (s *Server) accountAccess(r *http.Request, sess *session, write bool) (subscriptions.Access, error) {
	return s.subscriptions.Authorize(sess.principal, r.PathValue("account_id"), write)
}

type webhookListView struct {
	layoutView
	CanWrite      bool
	ReadOnlyWhy   string
	Subscriptions []webhooks.Subscription
	Total         int64
	From, To      int64
	PrevOffset    int64
	NextOffset    int64
	HasPrev       bool
	HasNext       bool
	// Disabled and Failing mark webhooks deactivated automatically, and
	// webhooks whose last deliveries failed.
	Disabled, Failing map[string]bool
	Search            *deliverySearchView // nil without a delivery engine
	// Incidents marks the webhooks whose breaker is open and lists the
	// notices of the last 7 days (nil without the incident use cases).
	Incidents *incidentsView
}

// flashes are the messages a redirect may ask the next page to show; only
// these fixed texts can appear, whatever the query string says.
var flashes = map[string]string{
	"deleted":     "The webhook was deleted.",
	"saved":       "Your changes were saved.",
	"activated":   "The webhook is active: it receives events again.",
	"deactivated": "The webhook is inactive: it receives no events until you activate it.",
	"retried":     "A new delivery of the same body was started. It appears in Recent Deliveries.",
	"replaying":   "The missed deliveries are being sent again, oldest first, a few a second. They appear in Recent Deliveries.",
	"probing": "The probe goes now: the oldest waiting delivery is sent to the endpoint. " +
		"If the endpoint answers, the waiting deliveries follow, oldest first. Reload in a few seconds to see how it went.",
	"breaker-closed":   "The endpoint is not on hold any more: its deliveries go as usual.",
	"endpoint-saved":   "The notification endpoint was saved. Its signing secret is unchanged.",
	"endpoint-removed": "The notification endpoint was removed. Notices are still listed on the webhooks page, but no longer sent.",
}

func (s *Server) webhookList(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, false)
	if err != nil {
		return err
	}
	offset, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if offset < 0 {
		offset = 0
	}
	page, err := s.subscriptions.List(r.Context(), a, webhooksPageSize, offset)
	if err != nil {
		return err
	}
	acct := a.Account()
	v := &webhookListView{
		layoutView:    s.layout(sess, "Webhooks", &acct, "webhooks"),
		CanWrite:      a.WriteErr() == nil,
		ReadOnlyWhy:   webhooks.ErrorMessage(a.WriteErr()),
		Subscriptions: page.Subscriptions,
		Total:         page.Total,
		From:          offset + 1,
		To:            offset + int64(len(page.Subscriptions)),
		HasPrev:       offset > 0,
		PrevOffset:    max(0, offset-webhooksPageSize),
		NextOffset:    offset + webhooksPageSize,
	}
	v.HasNext = v.To < page.Total
	v.Flash = flashes[r.URL.Query().Get("done")]
	if s.reads != nil {
		if v.Disabled, v.Failing, err = s.reads.WebhookFlags(r.Context(), a); err != nil {
			return err
		}
	}
	if v.Search, err = s.searchDeliveries(r, a); err != nil {
		return err
	}
	if v.Incidents, err = s.accountIncidents(r, a); err != nil {
		return err
	}
	return s.render(w, r, http.StatusOK, "webhooks", sess, v)
}

type webhookDetailView struct {
	layoutView
	CanWrite    bool
	ReadOnlyWhy string
	Sub         webhooks.Subscription
	Deliveries  *deliveriesView
	Test        *testResultView
	// SlowP95 is set when the endpoint's recent attempts come close to
	// the delivery timeout (their 95th percentile is over SlowWarning).
	SlowP95 string
	// Health is how its deliveries are going (nil without deliveries),
	// with its last 7 days as a picture.
	Health *deliveries.Health
	Chart  template.HTML
	// Missed counts the skipped and failed deliveries of the last 7 days
	// (the "Send missed deliveries" offer).
	Missed int64
	// HasDeliverySettings links the webhook's delivery settings page.
	HasDeliverySettings bool
	// Breaker is the banner of an open endpoint breaker (nil: closed, or
	// no incident use cases).
	Breaker *breakerBanner
}

// SlowWarning is the 95th percentile of recent attempt times over which the
// webhook page warns that deliveries are close to failing as timeouts
// (the spec's limit is 10 s).
const SlowWarning = 7 * time.Second

// loadWebhook is the page's subscription, if the caller may read it (or
// change it, with write).
func (s *Server) loadWebhook(r *http.Request, sess *session, write bool) (subscriptions.Access, webhooks.Subscription, error) {
	a, err := s.accountAccess(r, sess, write)
	if err != nil {
		return subscriptions.Access{}, webhooks.Subscription{}, err
	}
	sub, err := s.subscriptions.Get(r.Context(), a, r.PathValue("webhook_id"))
	return a, sub, err
}

// loadWebhookDeliveries is loadWebhook with the webhook for the reads of
// its deliveries.
func (s *Server) loadWebhookDeliveries(r *http.Request, sess *session, write bool) (subscriptions.Access, webhooks.Subscription, deliveryreads.Webhook, error) {
	a, sub, err := s.loadWebhook(r, sess, write)
	if err != nil {
		return subscriptions.Access{}, webhooks.Subscription{}, deliveryreads.Webhook{}, err
	}
	wh, err := s.reads.Webhook(r.Context(), a, sub.ID)
	return a, sub, wh, err
}

func (s *Server) webhookDetail(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, false)
	if err != nil {
		return err
	}
	v, err := s.detailView(r, sess, a, sub)
	if err != nil {
		return err
	}
	v.Flash = flashes[r.URL.Query().Get("done")]
	return s.render(w, r, http.StatusOK, "webhook", sess, v)
}

// detailView is the webhook page with its Recent Deliveries, health and the
// outcome of the test named by ?tested=.
func (s *Server) detailView(r *http.Request, sess *session, a subscriptions.Access, sub webhooks.Subscription) (*webhookDetailView, error) {
	acct := a.Account()
	v := &webhookDetailView{
		layoutView:          s.layout(sess, sub.Name, &acct, "webhooks"),
		CanWrite:            a.WriteErr() == nil,
		ReadOnlyWhy:         webhooks.ErrorMessage(a.WriteErr()),
		Sub:                 sub,
		HasDeliverySettings: s.deliverySettings != nil,
	}
	if s.reads != nil {
		wh, err := s.reads.Webhook(r.Context(), a, sub.ID)
		if err != nil {
			return nil, err
		}
		if v.Deliveries, err = s.recentDeliveries(r, wh); err != nil {
			return nil, err
		}
		h, err := s.reads.Health(r.Context(), wh)
		if err != nil {
			return nil, err
		}
		v.Health = &h
		if h.AttemptP95 > SlowWarning {
			v.SlowP95 = fmt.Sprintf("%.1f s", h.AttemptP95.Seconds())
		}
		v.Missed = h.Deliveries[deliveries.StatusSkipped].Last7d + h.Deliveries[deliveries.StatusFailed].Last7d
		hours, err := s.reads.Hourly(r.Context(), wh)
		if err != nil {
			return nil, err
		}
		v.Chart = healthChart(hours, time.Now())
		if v.Test, err = s.testResult(r, wh); err != nil {
			return nil, err
		}
	}
	if s.incidents != nil {
		b, err := s.incidents.Breaker(r.Context(), a, sub.ID)
		if err != nil {
			return nil, err
		}
		v.Breaker = newBreakerBanner(b, s.now())
		v.Deliveries.showProbes(b, s.now())
	}
	return v, nil
}

func (s *Server) setWebhookActive(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	id := r.PathValue("webhook_id")
	active := r.PostForm.Get("active") == "true"
	if _, err := s.subscriptions.Update(r.Context(), a, id, webhooks.SubscriptionUpdate{Active: &active}); err != nil {
		return err
	}
	done := "deactivated"
	if active {
		done = "activated"
	}
	http.Redirect(w, r, webhookPath(a.Account().ID, id)+"?done="+done, http.StatusSeeOther)
	return nil
}

func (s *Server) deleteWebhookConfirm(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	acct := a.Account()
	return s.render(w, r, http.StatusOK, "webhook_delete", sess, &webhookDetailView{
		layoutView: s.layout(sess, "Delete "+sub.Name, &acct, "webhooks"),
		CanWrite:   true, Sub: sub,
	})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	if err := s.subscriptions.Delete(r.Context(), a, r.PathValue("webhook_id")); err != nil {
		return err
	}
	http.Redirect(w, r, webhooksPath(a.Account().ID)+"?done=deleted", http.StatusSeeOther)
	return nil
}
