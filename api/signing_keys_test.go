package api_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/api"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// signingKeyItem is a key as the authenticated endpoint returns it.
type signingKeyItem struct {
	ID         string            `json:"id"`
	Algorithm  string            `json:"algorithm"`
	PublicKey  string            `json:"public_key"`
	JWK        map[string]string `json:"jwk"`
	ValidFrom  string            `json:"valid_from"`
	ValidUntil *string           `json:"valid_until"`
}

type apiClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *apiClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *apiClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newSigningKeysAPI is the API with the signing keys service on clock.
func newSigningKeysAPI(t *testing.T, clock *apiClock) *testAPI {
	t.Helper()
	return newTestAPI(t, func(a *testAPI, d *api.Deps) {
		svc, err := signingkeys.NewService(signingkeys.NewStore(a.DB.Pool, mustNewBox(t)),
			signingkeys.Options{Overlap: time.Hour, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		d.SigningKeys = svc
	})
}

func signingKeysURL(a *testAPI, accountID int64) string {
	return a.URL + "/api/v3/accounts/" + strconv.FormatInt(accountID, 10) + "/webhooks/signing-keys"
}

func jwksURL(a *testAPI, accountID string) string {
	return a.URL + "/.well-known/webhooks/" + accountID + "/jwks.json"
}

func listSigningKeys(t *testing.T, a *testAPI, accountID int64, token string) []signingKeyItem {
	t.Helper()
	resp := doJSON(t, http.MethodGet, signingKeysURL(a, accountID), token, nil)
	requireStatus(t, resp, http.StatusOK)
	var keys []signingKeyItem
	resp.decodeData(t, &keys)
	return keys
}

// fetchJWKS is what a receiver does: GET the JWKS without credentials.
func fetchJWKS(t *testing.T, a *testAPI, accountID int64) (map[string]any, *testResponse) {
	t.Helper()
	resp := doJSON(t, http.MethodGet, jwksURL(a, strconv.FormatInt(accountID, 10)), "", nil)
	if resp.Code != http.StatusOK {
		t.Fatalf("JWKS: %d %s", resp.Code, resp.Body)
	}
	var set map[string]any
	if err := json.Unmarshal(resp.Body, &set); err != nil {
		t.Fatal(err)
	}
	return set, resp
}

// TestSigningKeys_ListRotateAndPublish: a reader lists the account's key
// (made on first use) in both public forms; rotating needs write
// permission and answers the new key and the old one until the overlap
// ends; the JWKS shows the same keys without credentials, and the old one
// leaves both once the overlap ended.
func TestSigningKeys_ListRotateAndPublish(t *testing.T) {
	clock := &apiClock{t: time.Now()}
	a := newSigningKeysAPI(t, clock)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	admin := a.mustCreateServiceToken(t, acct.ID, "account_admin").Token
	reader := a.mustCreateServiceToken(t, acct.ID, "read_only").Token

	keys := listSigningKeys(t, a, acct.ID, reader)
	if len(keys) != 1 || keys[0].ValidUntil != nil || keys[0].Algorithm != "Ed25519" {
		t.Fatalf("first list: %+v, want one current Ed25519 key", keys)
	}
	first := keys[0]
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(first.PublicKey, "whpk_"))
	x, _ := base64.RawURLEncoding.DecodeString(first.JWK["x"])
	if err != nil || len(raw) != ed25519.PublicKeySize || !bytes.Equal(raw, x) || first.JWK["kid"] != first.ID {
		t.Fatalf("the whpk_ form and the JWK disagree: %+v", first)
	}
	if again := listSigningKeys(t, a, acct.ID, reader); len(again) != 1 || again[0].ID != first.ID {
		t.Fatalf("second list made another key: %+v", again)
	}

	requireErrorEnvelope(t, doJSON(t, http.MethodPost, signingKeysURL(a, acct.ID)+"/rotate", reader, nil), http.StatusForbidden)
	resp := doJSON(t, http.MethodPost, signingKeysURL(a, acct.ID)+"/rotate", admin, nil)
	requireStatus(t, resp, http.StatusOK)
	resp.decodeData(t, &keys)
	wantUntil := strconv.FormatInt(clock.now().Add(time.Hour).UnixMicro(), 10)
	if len(keys) != 2 || keys[0].ValidUntil != nil || keys[1].ID != first.ID || keys[1].ValidUntil == nil || *keys[1].ValidUntil != wantUntil {
		t.Fatalf("after rotating: %+v; want the new key, then %s until %s", keys, first.ID, wantUntil)
	}
	rotated := keys[0]

	set, r := fetchJWKS(t, a, acct.ID)
	if r.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("Cache-Control = %q", r.Header.Get("Cache-Control"))
	}
	if kids := jwksKids(t, set); len(kids) != 2 || kids[0] != rotated.ID || kids[1] != first.ID {
		t.Fatalf("JWKS during the overlap: %v", kids)
	}

	clock.add(time.Hour)
	if kids := jwksKids(t, mustJWKS(t, a, acct.ID)); len(kids) != 1 || kids[0] != rotated.ID {
		t.Fatalf("JWKS after the overlap: %v, want the new key alone", kids)
	}
	if keys := listSigningKeys(t, a, acct.ID, reader); len(keys) != 1 || keys[0].ID != rotated.ID {
		t.Fatalf("list after the overlap: %+v", keys)
	}
}

func mustJWKS(t *testing.T, a *testAPI, accountID int64) map[string]any {
	t.Helper()
	set, _ := fetchJWKS(t, a, accountID)
	return set
}

// jwksKids checks that the set holds public Ed25519 keys and nothing else
// (no private member, no other field) and returns their kids in order.
func jwksKids(t *testing.T, set map[string]any) []string {
	t.Helper()
	if len(set) != 1 {
		t.Fatalf("JWKS members %v, want keys alone", set)
	}
	var kids []string
	for _, k := range set["keys"].([]any) {
		jwk := k.(map[string]any)
		for name := range jwk {
			switch name {
			case "kty", "crv", "x", "kid", "use", "alg":
			default:
				t.Fatalf("JWK member %q: %v", name, jwk)
			}
		}
		if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["use"] != "sig" || jwk["alg"] != "EdDSA" {
			t.Fatalf("JWK %v", jwk)
		}
		if x, err := base64.RawURLEncoding.DecodeString(jwk["x"].(string)); err != nil || len(x) != ed25519.PublicKeySize {
			t.Fatalf("JWK x %v: not a 32-byte key", jwk["x"])
		}
		kids = append(kids, jwk["kid"].(string))
	}
	return kids
}

// TestSigningKeys_AccountsAreIsolated: a credential of one account
// neither lists nor rotates another's keys; each account's JWKS holds
// its own keys only.
func TestSigningKeys_AccountsAreIsolated(t *testing.T) {
	a := newSigningKeysAPI(t, &apiClock{t: time.Now()})
	acctA, acctB := a.mustCreateAccount(t, webhooks.PlanTeam), a.mustCreateAccount(t, webhooks.PlanTeam)
	tokenA := a.mustCreateServiceToken(t, acctA.ID, "account_admin").Token
	tokenB := a.mustCreateServiceToken(t, acctB.ID, "account_admin").Token
	keysB := listSigningKeys(t, a, acctB.ID, tokenB)

	requireErrorEnvelope(t, doJSON(t, http.MethodGet, signingKeysURL(a, acctB.ID), tokenA, nil), http.StatusForbidden)
	requireErrorEnvelope(t, doJSON(t, http.MethodPost, signingKeysURL(a, acctB.ID)+"/rotate", tokenA, nil), http.StatusForbidden)
	if again := listSigningKeys(t, a, acctB.ID, tokenB); len(again) != 1 || again[0].ID != keysB[0].ID {
		t.Fatalf("b's keys changed: %+v", again)
	}
	kidsA, kidsB := jwksKids(t, mustJWKS(t, a, acctA.ID)), jwksKids(t, mustJWKS(t, a, acctB.ID))
	if len(kidsA) != 1 || len(kidsB) != 1 || kidsA[0] == kidsB[0] || kidsB[0] != keysB[0].ID {
		t.Fatalf("JWKS of a %v, of b %v: want one key each, b's own", kidsA, kidsB)
	}
}

// TestSigningKeys_Refusals: without credentials only the JWKS answers; a
// malformed or unknown account has no JWKS; without the service the
// routes answer 503.
func TestSigningKeys_Refusals(t *testing.T) {
	a := newSigningKeysAPI(t, &apiClock{t: time.Now()})
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, signingKeysURL(a, acct.ID), "", nil), http.StatusUnauthorized)
	requireErrorEnvelope(t, doJSON(t, http.MethodPost, signingKeysURL(a, acct.ID)+"/rotate", "", nil), http.StatusUnauthorized)
	for _, id := range []string{"987654321", "0", "-1", "abc", "1e3"} {
		requireErrorEnvelope(t, doJSON(t, http.MethodGet, jwksURL(a, id), "", nil), http.StatusNotFound)
	}
	var n int
	if err := a.DB.Pool.QueryRow(t.Context(), "SELECT count(*) FROM account_signing_keys").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused requests made %d keys (%v)", n, err)
	}

	bare := newTestAPI(t)
	acct = bare.mustCreateAccount(t, webhooks.PlanTeam)
	token := bare.mustCreateServiceToken(t, acct.ID, "account_admin").Token
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, signingKeysURL(bare, acct.ID), token, nil), http.StatusServiceUnavailable)
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, jwksURL(bare, strconv.FormatInt(acct.ID, 10)), "", nil), http.StatusServiceUnavailable)
}
