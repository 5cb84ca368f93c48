package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
)

func micros(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// notify stores the notice of kind for an incident (once per webhook, kind
// and incident) and starts its sending; an account past its hourly bound
// gets no more notices that hour.
func (a *Activities) notify(ctx context.Context, inc incidents.Incident, kind string) {
	log := a.deps.Logger.With("account_id", inc.AccountID, "subscription_id", inc.SubscriptionID, "kind", kind)
	if limit := a.deps.Incidents.MaxPerHour; limit > 0 {
		n, err := a.deps.IncidentStore.RecentNotices(ctx, inc.AccountID, a.deps.Now().Add(-time.Hour))
		if err != nil {
			log.WarnContext(ctx, "cannot count an account's notices; not telling it", "error", err.Error())
			return
		}
		if n >= int64(limit) {
			log.WarnContext(ctx, "an account got its notices for the hour; this one is dropped", "max_per_hour", limit)
			return
		}
	}
	now := a.deps.Now()
	id := webhooks.NewID(webhooks.NoticeIDPrefix)
	body, err := json.Marshal(webhooks.NoticeBody{Type: kind, NoticeID: id, AccountID: strconv.FormatInt(inc.AccountID, 10),
		Webhook:           webhooks.NoticeWebhook{ID: inc.SubscriptionID, Name: inc.WebhookName, ClientURL: inc.ClientURL},
		IncidentStartedAt: micros(inc.StartedAt), CreatedAt: micros(now)})
	if err != nil {
		log.ErrorContext(ctx, "cannot build a notice", "error", err.Error())
		return
	}
	created, err := a.deps.IncidentStore.CreateNotice(ctx, incidents.Notice{ID: id, AccountID: inc.AccountID,
		SubscriptionID: inc.SubscriptionID, Kind: kind, IncidentStartedAt: inc.StartedAt, Payload: body})
	if err != nil {
		log.WarnContext(ctx, "cannot store a notice", "error", err.Error())
		return
	}
	if !created {
		return // this incident's notice of this kind exists already
	}
	log.InfoContext(ctx, "account notice", "notice_id", id)
	if a.deps.Notices == nil {
		return
	}
	if err := a.deps.Notices.StartNotice(ctx, id, inc.AccountID); err != nil {
		log.WarnContext(ctx, "cannot start sending a notice", "notice_id", id, "error", err.Error())
	}
}

// SendNoticeResult is one attempt to send a notice.
type SendNoticeResult struct {
	Status     string // delivered or no_endpoint
	StatusCode int    `json:",omitempty"`
}

// SendNotice sends a stored notice to its account's notification endpoint,
// signed with the endpoint's secret (Authorization: hex HMAC-SHA256 of the
// body; webhook-id, webhook-timestamp and webhook-signature as Standard
// Webhooks) and, in webhook-signature, with the account's Ed25519 keys
// ("v1a", as deliveries), and records the attempt. It fails (to be
// retried) when the endpoint does not answer 2xx; without an endpoint it
// records no_endpoint and succeeds.
func (a *Activities) SendNotice(ctx context.Context, noticeID string) (SendNoticeResult, error) {
	n, err := a.deps.IncidentStore.Notice(ctx, noticeID)
	if errors.Is(err, incidents.ErrNoNotice) {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError("no such notice", "NoNotice", err)
	}
	if err != nil {
		return SendNoticeResult{}, err
	}
	if n.Status == "delivered" {
		return SendNoticeResult{Status: n.Status}, nil
	}
	ep, err := a.deps.IncidentStore.NotificationEndpoint(ctx, n.AccountID)
	if errors.Is(err, incidents.ErrNoNotificationEndpoint) {
		return SendNoticeResult{Status: "no_endpoint"}, a.deps.IncidentStore.RecordNoticeAttempt(ctx, n.ID, "no_endpoint", 0, "")
	}
	if err != nil {
		return SendNoticeResult{}, err
	}
	secret, err := a.deps.Box.Open(ep.SecretKeyID, ep.SecretCiphertext, webhooks.NotificationSecretAAD(n.AccountID))
	if err != nil {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError("the notification endpoint's secret cannot be decrypted", "Secret", nil)
	}
	r := a.post(ctx, n.AccountID, ep.URL, n.Payload, func(h http.Header) error {
		now := a.deps.Now()
		sig := webhooks.SignStandard(secret, n.ID, now, n.Payload)
		asymmetric, err := a.accountSignatures(ctx, n.AccountID, n.ID, now, n.Payload)
		if err != nil {
			return err
		}
		if asymmetric != "" {
			sig += " " + asymmetric
		}
		h.Set("Authorization", webhooks.Sign(secret, n.Payload))
		h.Set(webhooks.HeaderStandardID, n.ID)
		h.Set(webhooks.HeaderStandardTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(webhooks.HeaderStandardSignature, sig)
		return nil
	}, nil, nil)
	if r.Kind == "" {
		return SendNoticeResult{Status: "delivered", StatusCode: r.StatusCode},
			a.deps.IncidentStore.RecordNoticeAttempt(ctx, n.ID, "delivered", r.StatusCode, "")
	}
	status := "pending"
	if !deliveries.Retryable(r.Kind, r.StatusCode) {
		status = "failed"
	}
	if err := a.deps.IncidentStore.RecordNoticeAttempt(ctx, n.ID, status, r.StatusCode, r.Message); err != nil {
		return SendNoticeResult{}, err
	}
	if status == "failed" {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError(r.Message, "NoticeRefused", nil)
	}
	return SendNoticeResult{}, fmt.Errorf("notice %s: %s", n.ID, r.Message)
}

// NoticeGaveUp records that a notice's sending ended without success.
func (a *Activities) NoticeGaveUp(ctx context.Context, noticeID string) error {
	return a.deps.IncidentStore.RecordNoticeAttempt(ctx, noticeID, "failed", 0, "every attempt failed")
}
