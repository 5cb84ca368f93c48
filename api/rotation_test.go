package api_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jobhooks/jobhooks"
)

type rotatedKey struct {
	UserID    int64  `json:"user_id"`
	Key       string `json:"key"`
	CreatedAt string `json:"created_at"`
}

func rotatePath(a *testAPI, userID int64) string {
	return a.URL + "/api/v2/users/" + strconv.FormatInt(userID, 10) + "/apikey/"
}

// mustRotate rotates u's key with token and returns the new key.
func mustRotate(t *testing.T, a *testAPI, userID int64, token string) rotatedKey {
	t.Helper()
	resp := doJSON(t, http.MethodPost, rotatePath(a, userID), token, nil)
	requireStatus(t, resp, http.StatusOK)
	var got rotatedKey
	resp.decodeData(t, &got)
	return got
}

var microsRE = regexp.MustCompile(`^[0-9]{16}$`)

func TestRotateAPIKey_ReplacesKey(t *testing.T) {
	for _, path := range []string{"/apikey/", "/apikey"} {
		t.Run("path="+path, func(t *testing.T) {
			a := newTestAPI(t)
			acct := a.mustCreateAccount(t, webhooks.PlanTeam)
			u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
			url := a.URL + "/api/v2/users/" + strconv.FormatInt(u.ID, 10) + path

			resp := doJSON(t, http.MethodPost, url, u.Token, nil)
			requireStatus(t, resp, http.StatusOK)
			var got rotatedKey
			resp.decodeData(t, &got)
			if got.UserID != u.ID {
				t.Errorf("user_id = %d, want %d", got.UserID, u.ID)
			}
			if !strings.HasPrefix(got.Key, "whu_") || len(got.Key) < 4+43 || got.Key == u.Token {
				t.Errorf("key = %q, want a new whu_ key of at least 32 random bytes", got.Key)
			}
			if !microsRE.MatchString(got.CreatedAt) {
				t.Errorf("created_at = %q, want 16 digits (microseconds)", got.CreatedAt)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
			requireOnlyNewKeyWorks(t, a, acct.ID, u.ID, u.Token, got.Key)
		})
	}
}

// requireOnlyNewKeyWorks checks that oldKey gets 401 on every endpoint and
// newKey works on all of them.
func requireOnlyNewKeyWorks(t *testing.T, a *testAPI, accountID, userID int64, oldKey, newKey string) {
	t.Helper()
	gets := []string{"/api/v2/accounts/", "/api/v2/accounts", "/api/v2/accounts/" + strconv.FormatInt(accountID, 10) + "/"}
	for _, p := range gets {
		requireErrorEnvelope(t, doJSON(t, http.MethodGet, a.URL+p, oldKey, nil), http.StatusUnauthorized)
		h := http.Header{"Authorization": {"Bearer " + oldKey}}
		requireErrorEnvelope(t, doRequest(t, http.MethodGet, a.URL+p, h, nil), http.StatusUnauthorized)
	}
	requireErrorEnvelope(t, doJSON(t, http.MethodPost, rotatePath(a, userID), oldKey, nil), http.StatusUnauthorized)
	for _, p := range gets {
		requireStatus(t, doJSON(t, http.MethodGet, a.URL+p, newKey, nil), http.StatusOK)
	}
}

func TestRotateAPIKey_RepeatedRotationsChain(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	keys := []string{u.Token}
	for i := 0; i < 3; i++ {
		keys = append(keys, mustRotate(t, a, u.ID, keys[len(keys)-1]).Key)
	}
	last := keys[len(keys)-1]
	for _, old := range keys[:len(keys)-1] {
		requireErrorEnvelope(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", old, nil), http.StatusUnauthorized)
	}
	requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", last, nil), http.StatusOK)
}

func TestRotateAPIKey_BearerSchemeAccepted(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	resp := doRequest(t, http.MethodPost, rotatePath(a, u.ID), http.Header{"Authorization": {"Bearer " + u.Token}}, nil)
	requireStatus(t, resp, http.StatusOK)
	var got rotatedKey
	resp.decodeData(t, &got)
	requireOnlyNewKeyWorks(t, a, acct.ID, u.ID, u.Token, got.Key)
}

func TestRotateAPIKey_Refusals(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	other := a.mustCreateAccount(t, webhooks.PlanEnterprise)
	target := a.mustCreateUser(t, acct.ID, "developer", "account_admin")
	colleague := a.mustCreateUser(t, acct.ID, "developer", "account_admin", "admin")
	stranger := a.mustCreateUser(t, other.ID, "developer", "account_admin")
	admin := a.mustCreateServiceToken(t, acct.ID, "account_admin", "admin", "owner")

	tests := []struct {
		name     string
		userID   string
		token    string
		wantCode int
	}{
		{"ColleaguesKey", strconv.FormatInt(target.ID, 10), colleague.Token, http.StatusForbidden},
		{"OtherAccountUsersKey", strconv.FormatInt(target.ID, 10), stranger.Token, http.StatusForbidden},
		{"ServiceTokenOnUser", strconv.FormatInt(target.ID, 10), admin.Token, http.StatusForbidden},
		{"ServiceTokenOnItsOwnID", strconv.FormatInt(admin.ID, 10), admin.Token, http.StatusForbidden},
		{"ServiceTokenOnUnknownUser", "999999999", admin.Token, http.StatusForbidden},
		{"OwnKeyOnUnknownUser", "999999999", colleague.Token, http.StatusForbidden},
		{"InvalidKey", strconv.FormatInt(target.ID, 10), "whu_" + strings.Repeat("A", 43), http.StatusUnauthorized},
		{"NoKey", strconv.FormatInt(target.ID, 10), "", http.StatusUnauthorized},
		{"MalformedUserID", "abc", target.Token, http.StatusNotFound},
		{"NegativeUserID", "-1", target.Token, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, suffix := range []string{"/apikey/", "/apikey"} {
				resp := doJSON(t, http.MethodPost, a.URL+"/api/v2/users/"+tt.userID+suffix, tt.token, nil)
				requireErrorEnvelope(t, resp, tt.wantCode)
			}
		})
	}
	// None of the refused calls changed any key.
	for _, token := range []string{target.Token, colleague.Token, stranger.Token, admin.Token} {
		requireStatus(t, doJSON(t, http.MethodGet, a.URL+"/api/v2/accounts/", token, nil), http.StatusOK)
	}
}

// Of 20 concurrent rotations with one key exactly one wins; the others see a
// dead key (401), and the key that survives is the one returned to the winner.
func TestRotateAPIKey_ConcurrentRotationsOneWins(t *testing.T) {
	a := newTestAPI(t)
	acct := a.mustCreateAccount(t, webhooks.PlanTeam)
	u := a.mustCreateUser(t, acct.ID, "developer", "account_admin")

	const n = 20
	responses := make([]*testResponse, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			responses[i] = doJSON(t, http.MethodPost, rotatePath(a, u.ID), u.Token, nil)
		}()
	}
	close(start)
	wg.Wait()

	var winners []rotatedKey
	for i, resp := range responses {
		switch resp.Code {
		case http.StatusOK:
			var got rotatedKey
			resp.decodeData(t, &got)
			winners = append(winners, got)
		case http.StatusUnauthorized:
			requireErrorEnvelope(t, resp, http.StatusUnauthorized)
		default:
			t.Errorf("rotation %d: %d %s, want 200 or 401", i, resp.Code, resp.Body)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d rotations succeeded, want exactly 1: %+v", len(winners), winners)
	}
	requireOnlyNewKeyWorks(t, a, acct.ID, u.ID, u.Token, winners[0].Key)
}

// BenchmarkRotateAPIKey measures sequential rotations, each with the key the
// previous one returned.
func BenchmarkRotateAPIKey(b *testing.B) {
	a := newTestAPI(b)
	acct := a.mustCreateAccount(b, webhooks.PlanTeam)
	u := a.mustCreateUser(b, acct.ID, "developer", "account_admin")
	url := a.URL + "/api/v2/users/" + strconv.FormatInt(u.ID, 10) + "/apikey/"
	key := u.Token
	b.ResetTimer()
	for b.Loop() {
		resp := doJSON(b, http.MethodPost, url, key, nil)
		if resp.Code != http.StatusOK {
			b.Fatalf("rotate = %d %s", resp.Code, resp.Body)
		}
		var got rotatedKey
		if err := json.Unmarshal(resp.Env.Data, &got); err != nil {
			b.Fatal(err)
		}
		key = got.Key
	}
}
