package ui

import (
	"errors"
	"net/http"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/incidents"
)

func notificationEndpointPath(accountID int64) string {
	return webhooksPath(accountID) + "/notification-endpoint"
}

// incidentRoutes lists the pages of the breaker and the account's
// notification endpoint, under Account Settings › Webhooks.
func (s *Server) incidentRoutes(base string) {
	s.mux.Handle("POST "+base+"/{webhook_id}/breaker/probe", s.page(s.probeWebhook))
	ep := base + "/notification-endpoint"
	s.mux.Handle("GET "+ep, s.page(s.notificationEndpoint))
	s.mux.Handle("POST "+ep, s.page(s.saveNotificationEndpoint))
	s.mux.Handle("GET "+ep+"/secret/rotate", s.page(s.notificationEndpointConfirm(true)))
	s.mux.Handle("POST "+ep+"/secret/rotate", s.page(s.rotateNotificationSecret))
	s.mux.Handle("GET "+ep+"/delete", s.page(s.notificationEndpointConfirm(false)))
	s.mux.Handle("POST "+ep+"/delete", s.page(s.deleteNotificationEndpoint))
}

type notificationEndpointView struct {
	layoutView
	CanWrite    bool
	ReadOnlyWhy string
	// Endpoint is the account's endpoint; nil when it has none.
	Endpoint *incidents.NotificationEndpoint
	URL      string // the form's value
	Errors   fieldErrors
}

// notificationEndpoint shows the account's notification endpoint (never
// its secret) and, to those who may change webhooks, the form to set it.
func (s *Server) notificationEndpoint(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, false)
	if err != nil {
		return err
	}
	acct := a.Account()
	v := &notificationEndpointView{
		layoutView: s.layout(sess, "Notification endpoint", &acct, "webhooks"),
		CanWrite:   a.WriteErr() == nil, ReadOnlyWhy: webhooks.ErrorMessage(a.WriteErr()),
	}
	e, err := s.incidents.NotificationEndpoint(r.Context(), a)
	switch {
	case errors.Is(err, incidents.ErrNoNotificationEndpoint):
	case err != nil:
		return err
	default:
		v.Endpoint, v.URL = &e, e.URL
	}
	v.Flash = flashes[r.URL.Query().Get("done")]
	return s.render(w, r, http.StatusOK, "notification_endpoint", sess, v)
}

type notificationSecretView struct {
	layoutView
	Endpoint               incidents.NotificationEndpoint
	Secret, StandardSecret string
	Rotated                bool
}

// saveNotificationEndpoint sets the URL through the same use case as the
// API: an endpoint it makes gets a signing secret, shown this once.
func (s *Server) saveNotificationEndpoint(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	acct := a.Account()
	url := r.PostForm.Get("url")
	e, secret, err := s.incidents.PutNotificationEndpoint(r.Context(), a, url)
	if err != nil {
		fe := fieldErrors{}
		if !fe.addInvalid(err) {
			return err
		}
		v := &notificationEndpointView{
			layoutView: s.layout(sess, "Notification endpoint", &acct, "webhooks"), CanWrite: true, URL: url, Errors: fe,
		}
		if cur, err := s.incidents.NotificationEndpoint(r.Context(), a); err == nil {
			v.Endpoint = &cur
		}
		return s.render(w, r, http.StatusBadRequest, "notification_endpoint", sess, v)
	}
	s.logger.InfoContext(r.Context(), "notification endpoint set", "account_id", acct.ID, "created", secret != "")
	if secret == "" {
		http.Redirect(w, r, notificationEndpointPath(acct.ID)+"?done=endpoint-saved", http.StatusSeeOther)
		return nil
	}
	v := &notificationSecretView{layoutView: s.layout(sess, "Notification endpoint", &acct, "webhooks"), Endpoint: e,
		Secret: secret, StandardSecret: webhooks.StandardWebhooksSecret(secret)}
	v.Flash = "The notification endpoint was saved."
	return s.render(w, r, http.StatusOK, "notification_secret", sess, v)
}

type notificationConfirmView struct {
	layoutView
	Endpoint incidents.NotificationEndpoint
	Rotate   bool // else delete
}

// notificationEndpointConfirm asks before the secret is rotated (rotate)
// or the endpoint removed.
func (s *Server) notificationEndpointConfirm(rotate bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, sess *session) error {
		a, err := s.accountAccess(r, sess, true)
		if err != nil {
			return err
		}
		e, err := s.incidents.NotificationEndpoint(r.Context(), a)
		if err != nil {
			return err
		}
		acct := a.Account()
		title := "Remove the notification endpoint"
		if rotate {
			title = "Rotate the notification secret"
		}
		return s.render(w, r, http.StatusOK, "notification_confirm", sess, &notificationConfirmView{
			layoutView: s.layout(sess, title, &acct, "webhooks"), Endpoint: e, Rotate: rotate,
		})
	}
}

// rotateNotificationSecret gives the endpoint a new secret and shows it
// once.
func (s *Server) rotateNotificationSecret(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	e, secret, err := s.incidents.RotateNotificationSecret(r.Context(), a)
	if err != nil {
		return err
	}
	acct := a.Account()
	s.logger.InfoContext(r.Context(), "notification endpoint secret rotated", "account_id", acct.ID)
	v := &notificationSecretView{layoutView: s.layout(sess, "Notification endpoint", &acct, "webhooks"), Endpoint: e,
		Secret: secret, StandardSecret: webhooks.StandardWebhooksSecret(secret), Rotated: true}
	v.Flash = "Secret rotated."
	return s.render(w, r, http.StatusOK, "notification_secret", sess, v)
}

func (s *Server) deleteNotificationEndpoint(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, err := s.accountAccess(r, sess, true)
	if err != nil {
		return err
	}
	if err := s.incidents.DeleteNotificationEndpoint(r.Context(), a); err != nil {
		return err
	}
	s.logger.InfoContext(r.Context(), "notification endpoint deleted", "account_id", a.Account().ID)
	http.Redirect(w, r, notificationEndpointPath(a.Account().ID)+"?done=endpoint-removed", http.StatusSeeOther)
	return nil
}
