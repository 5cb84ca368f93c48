package worker_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// TestDeliver_V1aVerifiesWithTheJWKSFetchedOverHTTP: a real delivery, a
// test delivery and a redelivery, through the worker on the dev server,
// carry a v1a
// signature that a receiver verifies with crypto/ed25519 and the keys it
// fetched, without credentials, from the account's JWKS; the spec's
// Authorization still verifies.
func TestDeliver_V1aVerifiesWithTheJWKSFetchedOverHTTP(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL, allTypes, nil, true)
	rc.setSecret(secret)
	id := e.ingest(webhooks.EventRunCompleted, 7, "", sub.ID)
	orig := e.waitDelivery(id, sub.ID)
	if code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil); code != http.StatusOK {
		t.Fatalf("test endpoint: %d %v", code, out)
	}
	redelivery, err := e.dispatch.Redeliver(context.Background(), e.account.ID, sub.ID, orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		d, err := e.store.Delivery(context.Background(), e.account.ID, sub.ID, redelivery)
		return err == nil && d.Status == deliveries.StatusSucceeded
	})

	resp, err := http.Get(e.api.URL + "/.well-known/webhooks/" + itoa(e.account.ID) + "/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct {
			Kty, Crv, X, Kid string
		} `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != http.StatusOK || len(set.Keys) != 1 {
		t.Fatalf("JWKS: %d %+v %v", resp.StatusCode, set, err)
	}
	pub, err := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	if err != nil || set.Keys[0].Kty != "OKP" || set.Keys[0].Crv != "Ed25519" || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("JWK %+v: not an Ed25519 key (%v)", set.Keys[0], err)
	}

	got := rc.got()
	if len(got) != 3 || got[2].Header.Get("Webhook-Delivery-Id") != redelivery {
		t.Fatalf("receiver got %d requests, want the delivery, the test and the redelivery", len(got))
	}
	for i, r := range got {
		msg := []byte(r.Header.Get("Webhook-Id") + "." + r.Header.Get("Webhook-Timestamp") + "." + string(r.Body))
		verified := false
		for _, s := range strings.Fields(r.Header.Get("Webhook-Signature")) {
			if b64, ok := strings.CutPrefix(s, "v1a,"); ok {
				sig, err := base64.StdEncoding.DecodeString(b64)
				verified = verified || (err == nil && ed25519.Verify(pub, msg, sig))
			}
		}
		if !verified || !r.Signed {
			t.Errorf("request %d: v1a verifies %v, Authorization verifies %v; webhook-signature %q",
				i, verified, r.Signed, r.Header.Get("Webhook-Signature"))
		}
	}
}
