package webhooks_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/jobhooks/jobhooks"
)

// TestSignStandard_VerifiedByTheOfficialLibrary: the Standard Webhooks
// headers we send verify with the specification's own Go library, given
// the secret derived from the hmac_secret; a changed body or id does not.
func TestSignStandard_VerifiedByTheOfficialLibrary(t *testing.T) {
	const secret = "kJ8wq0lN2x_secret-with-any-bytes"
	body := []byte(`{"accountId":1,"eventType":"job.run.completed"}`)
	now := time.Now()
	headers := func(id string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", webhooks.SignStandard(secret, "wdl_1", now, body))
		return h
	}
	wh, err := standardwebhooks.NewWebhook(webhooks.StandardWebhooksSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, headers("wdl_1")); err != nil {
		t.Fatalf("official library refuses our signature: %v", err)
	}
	if err := wh.Verify(append(body, ' '), headers("wdl_1")); err == nil {
		t.Error("a changed body verified")
	}
	if err := wh.Verify(body, headers("wdl_2")); err == nil {
		t.Error("another message id verified")
	}
}

// TestVerifyStandardSignature: any listed signature by the secret of that
// id, timestamp and body verifies; a change to any of them, or another
// secret, does not.
func TestVerifyStandardSignature(t *testing.T) {
	const secret, other = "current-secret", "previous-secret"
	body := []byte(`{"eventType":"job.run.started"}`)
	now := time.Unix(1_900_000_000, 0)
	good := webhooks.SignStandard(secret, "wdl_1", now, body)
	tests := []struct {
		name   string
		id     string
		ts     time.Time
		body   []byte
		header string
		want   bool
	}{
		{"Alone", "wdl_1", now, body, good, true},
		{"AmongOthers", "wdl_1", now, body, webhooks.SignStandard(other, "wdl_1", now, body) + " " + good, true},
		{"OtherSecret", "wdl_1", now, body, webhooks.SignStandard(other, "wdl_1", now, body), false},
		{"OtherID", "wdl_2", now, body, good, false},
		{"OtherTimestamp", "wdl_1", now.Add(time.Second), body, good, false},
		{"OtherBody", "wdl_1", now, append([]byte(nil), append(body, ' ')...), good, false},
		{"Empty", "wdl_1", now, body, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhooks.VerifyStandardSignature(secret, tt.id, tt.ts, tt.body, tt.header); got != tt.want {
				t.Fatalf("VerifyStandardSignature = %v, want %v", got, tt.want)
			}
		})
	}
}
