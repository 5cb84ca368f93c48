package ui

import (
	"net/http"
	"time"

	"github.com/jobhooks/jobhooks"
)

// Overlaps the rotation form offers for the previous secret.
var rotationOverlaps = []struct {
	Value string
	Label string
	D     time.Duration
}{
	{"86400", "24 hours (receivers have a day to switch)", 24 * time.Hour},
	{"3600", "1 hour", time.Hour},
	{"0", "None: the previous secret stops within seconds", 0},
}

type rotateSecretView struct {
	webhookDetailView
	Overlaps any
}

// rotateSecretConfirm explains a rotation and asks how long the previous
// secret stays valid.
func (s *Server) rotateSecretConfirm(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	acct := a.Account()
	return s.render(w, r, http.StatusOK, "webhook_rotate_secret", sess, &rotateSecretView{
		webhookDetailView: webhookDetailView{layoutView: s.layout(sess, "Rotate the secret of "+sub.Name, &acct, "webhooks"), CanWrite: true, Sub: sub},
		Overlaps:          rotationOverlaps,
	})
}

type secretRotatedView struct {
	webhookCreatedView
	PreviousExpiresAt *time.Time
}

// rotateSecret rotates through the same use case as the API and shows the
// new secret once.
func (s *Server) rotateSecret(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	overlap := time.Duration(-1)
	for _, o := range rotationOverlaps {
		if r.PostFormValue("overlap") == o.Value {
			overlap = o.D
		}
	}
	if overlap < 0 {
		return webhooks.FieldErrorf("overlap", "Choose how long the previous secret stays valid.")
	}
	secret, expires, err := s.subscriptions.RotateSecret(r.Context(), a, sub.ID, overlap)
	if err != nil {
		return err
	}
	s.logger.InfoContext(r.Context(), "webhook secret rotated", "account_id", a.Account().ID, "subscription_id", sub.ID, "previous_valid_for", overlap.String())
	acct := a.Account()
	v := &secretRotatedView{webhookCreatedView: webhookCreatedView{
		layoutView: s.layout(sess, "New secret for "+sub.Name, &acct, "webhooks"), Sub: sub, Secret: secret,
		StandardSecret: webhooks.StandardWebhooksSecret(secret),
	}, PreviousExpiresAt: expires}
	v.Flash = "Secret rotated."
	return s.render(w, r, http.StatusOK, "webhook_secret_rotated", sess, v)
}
