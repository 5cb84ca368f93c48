package webhooks

import "strconv"

// Notice kinds: what an account is told of one of its webhooks. They are
// the body's "type" on the wire and the kind the API and the UI list, so
// the worker that sends notices and the front ends that show them share
// them here.
const (
	// NoticeBreakerOpened: the webhook's breaker has been open for the
	// notice threshold; its deliveries wait for its endpoint.
	NoticeBreakerOpened = "webhook.breaker_opened"
	// NoticeDisabled: the webhook was deactivated automatically.
	NoticeDisabled = "webhook.disabled"
	// NoticeRecovered: an announced incident is over (the breaker stayed
	// closed for the quiet period).
	NoticeRecovered = "webhook.recovered"
)

// NoticeIDPrefix starts every notice id.
const NoticeIDPrefix = "ntc_"

// NoticeBody is a notice as it is sent (JSON, signed like a delivery with
// the notification endpoint's secret): the wire contract with the
// account's notification endpoint, the NoticeBody schema of the OpenAPI
// document. Timestamps are microseconds since the epoch as digit strings,
// like the spec's.
type NoticeBody struct {
	Type              string        `json:"type"`
	NoticeID          string        `json:"notice_id"`
	AccountID         string        `json:"account_id"`
	Webhook           NoticeWebhook `json:"webhook"`
	IncidentStartedAt string        `json:"incident_started_at"`
	CreatedAt         string        `json:"created_at"`
}

// NoticeWebhook is the webhook a notice is about.
type NoticeWebhook struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ClientURL string `json:"client_url"`
}

// NotificationSecretAAD binds a notification endpoint's sealed secret to
// its account, so a ciphertext copied to another account's row does not
// open. The service that seals the secret (incidents), the one that
// reseals it under a new key and the worker that opens it to sign notices
// must agree on it byte for byte, hence one definition here.
func NotificationSecretAAD(accountID int64) string {
	return "notification-endpoint/" + strconv.FormatInt(accountID, 10)
}
