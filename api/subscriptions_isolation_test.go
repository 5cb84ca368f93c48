package api_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

// requireNotFoundWithoutPermission checks the 404 of an unknown, deleted or
// other account's webhook: it must not hint at permissions.
func requireNotFoundWithoutPermission(t *testing.T, resp *testResponse) {
	t.Helper()
	requireErrorEnvelope(t, resp, http.StatusNotFound)
	if strings.Contains(strings.ToLower(string(resp.Body)), "permission") {
		t.Errorf("404 body mentions permission: %s", resp.Body)
	}
}

func TestSubscription_UnknownAndOtherAccountsIDsAreNotFound(t *testing.T) {
	s := newSubsAPI(t, nil)
	mine := s.mustCreateSub(t, nil)
	otherAcct := s.mustCreateAccount(t, webhooks.PlanEnterprise)
	otherWriter := s.mustCreateUser(t, otherAcct.ID, "developer", "admin").Token
	resp := doJSON(t, http.MethodPost, s.subsURL(otherAcct.ID), otherWriter, validBody())
	requireStatus(t, resp, http.StatusCreated)
	var theirs subItem
	resp.decodeData(t, &theirs)

	ids := map[string]string{
		"OtherAccountsID": theirs.ID,
		"UnknownID":       webhooks.NewID(webhooks.SubscriptionIDPrefix),
		"NotAnID":         "12345",
		"EmptyPrefix":     "wsu_",
	}
	for name, id := range ids {
		t.Run(name, func(t *testing.T) {
			for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
				resp := doJSON(t, method, s.subURL(s.Account.ID, id), s.Writer, map[string]any{"name": "hijack"})
				requireNotFoundWithoutPermission(t, resp)
			}
		})
	}
	// The other account's subscription is untouched, and mine is not in its list.
	resp = doJSON(t, http.MethodGet, s.subURL(otherAcct.ID, theirs.ID), otherWriter, nil)
	requireStatus(t, resp, http.StatusOK)
	var still subItem
	resp.decodeData(t, &still)
	if still.Name != "Run alerts" || still.UpdatedAt != theirs.UpdatedAt {
		t.Errorf("other account's subscription changed: %+v", still)
	}
	resp = doJSON(t, http.MethodGet, s.subsURL(otherAcct.ID), otherWriter, nil)
	if bytes.Contains(resp.Body, []byte(mine.ID)) {
		t.Errorf("other account's list shows my subscription: %s", resp.Body)
	}
	// And my credential cannot use the other account's path at all.
	resp = doJSON(t, http.MethodGet, s.subURL(otherAcct.ID, theirs.ID), s.Writer, nil)
	requireErrorEnvelope(t, resp, http.StatusForbidden)
}

func TestSubscription_SecretEncryptedAtRest(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	secret := *created.HMACSecret
	var keyID string
	var sealed []byte
	if err := s.DB.Pool.QueryRow(context.Background(),
		"SELECT secret_key_id, secret_ciphertext FROM webhook_subscriptions WHERE id = $1", created.ID).Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	dump := dumpTables(t, s.testAPI, "webhook_subscriptions")
	if strings.Contains(dump, secret) || bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("the hmac_secret is readable in the database")
	}
	if opened, err := s.Box.Open(keyID, sealed, created.ID); err != nil || opened != secret {
		t.Fatalf("ciphertext opens to %q, %v; want the secret", opened, err)
	}
	if _, err := s.Box.Open(keyID, sealed, "wsu_other"); err == nil {
		t.Error("ciphertext opened for another subscription id: aad not bound")
	}
	// Never shown again, never logged.
	for _, resp := range []*testResponse{
		doJSON(t, http.MethodGet, s.subURL(s.Account.ID, created.ID), s.Writer, nil),
		doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil),
		doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID), s.Writer, map[string]any{"name": "n"}),
	} {
		if bytes.Contains(resp.Body, []byte(secret)) || bytes.Contains(resp.Body, []byte("hmac_secret")) {
			t.Errorf("response shows the secret: %s", resp.Body)
		}
	}
	if logs := s.Logs.String(); !strings.Contains(logs, created.ID) || strings.Contains(logs, secret) {
		t.Error("the creation must be logged (with the id) and the hmac_secret must not be")
	}
	// Two subscriptions never share a secret.
	if second := s.mustCreateSub(t, nil); *second.HMACSecret == secret {
		t.Error("two subscriptions got the same secret")
	}
}
