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
