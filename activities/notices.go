package activities

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/secrets"
	"go.temporal.io/sdk/temporal"
)

// Notices are the activities of the workflow that sends an account
// notice (an incident announced, a recovery, a deactivation) to the
// account's notification endpoint. Register it with the worker; build it
// with New.
type Notices struct {
	store *incidents.Store
	// box opens the notification endpoints' secrets.
	box  *secrets.Box
	send *sender
	now  func() time.Time
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
func (ns *Notices) SendNotice(ctx context.Context, noticeID string) (SendNoticeResult, error) {
	n, err := ns.store.Notice(ctx, noticeID)
	if errors.Is(err, incidents.ErrNoNotice) {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError("no such notice", "NoNotice", err)
	}
	if err != nil {
		return SendNoticeResult{}, err
	}
	if n.Status == "delivered" {
		return SendNoticeResult{Status: n.Status}, nil
	}
	ep, err := ns.store.NotificationEndpoint(ctx, n.AccountID)
	if errors.Is(err, incidents.ErrNoNotificationEndpoint) {
		return SendNoticeResult{Status: "no_endpoint"}, ns.store.RecordNoticeAttempt(ctx, n.ID, "no_endpoint", 0, "")
	}
	if err != nil {
		return SendNoticeResult{}, err
	}
	secret, err := ns.box.Open(ep.SecretKeyID, ep.SecretCiphertext, webhooks.NotificationSecretAAD(n.AccountID))
	if err != nil {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError("the notification endpoint's secret cannot be decrypted", "Secret", nil)
	}
	r := ns.send.post(ctx, n.AccountID, ep.URL, n.Payload, func(h http.Header) error {
		now := ns.now()
		sig := webhooks.SignStandard(secret, n.ID, now, n.Payload)
		asymmetric, err := ns.send.accountSignatures(ctx, n.AccountID, n.ID, now, n.Payload)
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
			ns.store.RecordNoticeAttempt(ctx, n.ID, "delivered", r.StatusCode, "")
	}
	status := "pending"
	if !deliveries.Retryable(r.Kind, r.StatusCode) {
		status = "failed"
	}
	if err := ns.store.RecordNoticeAttempt(ctx, n.ID, status, r.StatusCode, r.Message); err != nil {
		return SendNoticeResult{}, err
	}
	if status == "failed" {
		return SendNoticeResult{}, temporal.NewNonRetryableApplicationError(r.Message, "NoticeRefused", nil)
	}
	return SendNoticeResult{}, fmt.Errorf("notice %s: %s", n.ID, r.Message)
}

// NoticeGaveUp records that a notice's sending ended without success.
func (ns *Notices) NoticeGaveUp(ctx context.Context, noticeID string) error {
	return ns.store.RecordNoticeAttempt(ctx, noticeID, "failed", 0, "every attempt failed")
}
