package api_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
)

// TestRotateSecret: a writer gets a new secret once (no-store), sealed at
// rest; the previous one stays until its expiry; readers, other accounts,
// unknown webhooks and bad expiries change nothing.
func TestRotateSecret(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.subURL(s.Account.ID, sub.ID) + "/secret/rotate"
	reader := s.mustCreateUser(t, s.Account.ID, "read_only", "read_only").Token
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	sealed := func() (keyID string, ciphertext []byte, previous []byte, expires *string) {
		t.Helper()
		err := s.DB.Pool.QueryRow(context.Background(), `SELECT secret_key_id, secret_ciphertext, previous_secret_ciphertext,
			(EXTRACT(EPOCH FROM previous_secret_expires_at) * 1000000)::bigint::text FROM webhook_subscriptions WHERE id = $1`, sub.ID).
			Scan(&keyID, &ciphertext, &previous, &expires)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	_, before, _, _ := sealed()

	for _, tt := range []struct {
		name   string
		url    string
		token  string
		body   any
		status int
	}{
		{"ReadOnlyIsForbidden", url, reader, nil, http.StatusForbidden},
		{"AnotherAccountIsForbidden", url, otherWriter, nil, http.StatusForbidden},
		{"UnknownWebhookIsNotFound", s.subURL(s.Account.ID, "wsu_unknown") + "/secret/rotate", s.Writer, nil, http.StatusNotFound},
		{"NegativeExpiryIsInvalid", url, s.Writer, map[string]any{"expire_previous_in_seconds": -1}, http.StatusBadRequest},
		{"ExpiryOverAWeekIsInvalid", url, s.Writer, map[string]any{"expire_previous_in_seconds": 604801}, http.StatusBadRequest},
		{"HugeExpiryDoesNotWrapIntoRange", url, s.Writer, map[string]any{"expire_previous_in_seconds": 18446744074}, http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			requireStatus(t, doJSON(t, http.MethodPost, tt.url, tt.token, tt.body), tt.status)
			if _, now, _, _ := sealed(); string(now) != string(before) {
				t.Fatal("a refused rotation changed the secret")
			}
		})
	}

	resp := doJSON(t, http.MethodPost, url, s.Writer, map[string]any{"expire_previous_in_seconds": 60})
	requireStatus(t, resp, http.StatusOK)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	var got struct {
		ID                      string  `json:"id"`
		HMACSecret              string  `json:"hmac_secret"`
		StandardWebhooksSecret  string  `json:"standard_webhooks_secret"`
		PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	}
	resp.decodeData(t, &got)
	if got.ID != sub.ID || got.HMACSecret == "" || sub.HMACSecret == nil || got.HMACSecret == *sub.HMACSecret ||
		got.StandardWebhooksSecret != webhooks.StandardWebhooksSecret(got.HMACSecret) || got.PreviousSecretExpiresAt == nil {
		t.Fatalf("rotation = %+v", got)
	}
	_, now, previous, expires := sealed()
	if string(previous) != string(before) || string(now) == string(before) || expires == nil || *expires != *got.PreviousSecretExpiresAt {
		t.Errorf("stored: previous is the old ciphertext %v, new differs %v, expires %v (answered %v)",
			string(previous) == string(before), string(now) != string(before), expires, *got.PreviousSecretExpiresAt)
	}
	if bytesContain(now, got.HMACSecret) {
		t.Error("the new secret is stored in plain text")
	}
	if logs := s.Logs.String(); !strings.Contains(logs, "webhook secret rotated") || strings.Contains(logs, got.HMACSecret) {
		t.Errorf("the rotation is not logged, or its secret is:\n%s", logs)
	}
	// The spec's subscription object is unchanged: no secret, no new field.
	if after := s.mustGetSub(t, sub.ID); after.HMACSecret != nil {
		t.Error("GET shows a secret after rotation")
	}

	// expire_previous_in_seconds 0 keeps the previous secret only for the
	// attempts already being signed: 2 s.
	resp = doJSON(t, http.MethodPost, url, s.Writer, map[string]any{"expire_previous_in_seconds": 0})
	requireStatus(t, resp, http.StatusOK)
	resp.decodeData(t, &got)
	var within bool
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT previous_secret_expires_at BETWEEN now() AND now() + interval '3 seconds'
		FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&within); err != nil || !within || got.PreviousSecretExpiresAt == nil {
		t.Errorf("expire 0: previous secret expires within 3 s: %v (%v), answered %v", within, err, got.PreviousSecretExpiresAt)
	}
}

func bytesContain(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
