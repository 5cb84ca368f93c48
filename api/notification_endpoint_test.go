package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
)

// endpointItem is the notification endpoint as the API returns it; Secret
// and StandardSecret are nil when absent.
type endpointItem struct {
	URL            string  `json:"url"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	Secret         *string `json:"secret"`
	StandardSecret *string `json:"standard_webhooks_secret"`
}

func (s *incidentsAPI) endpointURL(accountID int64) string {
	return s.webhooksURL(accountID) + "/notification-endpoint"
}

// storedSecret opens the account's sealed notification secret the way the
// worker does (AAD webhooks.NotificationSecretAAD), and returns the raw
// ciphertext too.
func (s *incidentsAPI) storedSecret(t testing.TB, accountID int64) (string, []byte) {
	t.Helper()
	var keyID string
	var sealed []byte
	if err := s.DB.Pool.QueryRow(context.Background(),
		`SELECT secret_key_id, secret_ciphertext FROM account_notification_endpoints WHERE account_id = $1`, accountID).
		Scan(&keyID, &sealed); err != nil {
		t.Fatalf("read the stored endpoint: %v", err)
	}
	plain, err := s.Box.Open(keyID, sealed, webhooks.NotificationSecretAAD(accountID))
	if err != nil {
		t.Fatalf("open the stored secret with the worker's AAD: %v", err)
	}
	if _, err := s.Box.Open(keyID, sealed, webhooks.NotificationSecretAAD(accountID+1)); err == nil {
		t.Error("the stored secret opens with another account's AAD")
	}
	return plain, sealed
}

// TestNotificationEndpoint_SecretShownOnceSealedAtRest: the PUT that makes
// the endpoint answers 201 with its secret (no-store), stored only sealed
// and bound to the account; reads never show it; a PUT that changes the
// URL keeps it and does not show it; a rotation shows a new one once;
// DELETE removes the endpoint.
func TestNotificationEndpoint_SecretShownOnceSealedAtRest(t *testing.T) {
	s := newIncidentsAPI(t)
	url := s.endpointURL(s.Account.ID)

	requireErrorEnvelope(t, doJSON(t, http.MethodGet, url, s.Writer, nil), http.StatusNotFound)

	resp := doJSON(t, http.MethodPut, url, s.Writer, map[string]any{"url": "https://" + publicHost + "/notices"})
	requireStatus(t, resp, http.StatusCreated)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	var made endpointItem
	resp.decodeData(t, &made)
	if made.URL != "https://"+publicHost+"/notices" || made.Secret == nil || len(*made.Secret) < 32 || made.CreatedAt == "" {
		t.Fatalf("created endpoint = %s", resp.Env.Data)
	}
	secret := *made.Secret
	if made.StandardSecret == nil || *made.StandardSecret != webhooks.StandardWebhooksSecret(secret) {
		t.Errorf("standard_webhooks_secret = %v, want whsec_ + base64 of secret", made.StandardSecret)
	}
	stored, sealed := s.storedSecret(t, s.Account.ID)
	if stored != secret {
		t.Fatal("the stored secret is not the one shown")
	}
	if bytes.Contains(sealed, []byte(secret)) {
		t.Fatal("the secret is stored in plain text")
	}
	var plainCopies int
	if err := s.DB.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM account_notification_endpoints WHERE strpos(url, $1) > 0 OR strpos(encode(secret_ciphertext, 'escape'), $1) > 0`,
		secret).Scan(&plainCopies); err != nil || plainCopies != 0 {
		t.Fatalf("rows holding the plain secret: %d (%v)", plainCopies, err)
	}

	// Reads never show it.
	resp = doJSON(t, http.MethodGet, url, s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	if strings.Contains(string(resp.Body), secret) || strings.Contains(string(resp.Body), "secret") {
		t.Fatalf("GET shows the secret: %s", resp.Body)
	}

	// A new URL keeps the secret and does not show it.
	resp = doJSON(t, http.MethodPut, url, s.Writer, map[string]any{"url": "https://" + publicHost + "/v2/notices"})
	requireStatus(t, resp, http.StatusOK)
	var changed endpointItem
	resp.decodeData(t, &changed)
	if changed.URL != "https://"+publicHost+"/v2/notices" || changed.Secret != nil || changed.CreatedAt != made.CreatedAt {
		t.Fatalf("changed endpoint = %s", resp.Env.Data)
	}
	if got, _ := s.storedSecret(t, s.Account.ID); got != secret {
		t.Fatal("changing the URL changed the secret")
	}

	// A rotation shows a new secret, once.
	resp = doJSON(t, http.MethodPost, url+"/secret/rotate", s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("rotate: Cache-Control = %q, want no-store", cc)
	}
	var rotated endpointItem
	resp.decodeData(t, &rotated)
	if rotated.Secret == nil || *rotated.Secret == secret || rotated.URL != changed.URL {
		t.Fatalf("rotated endpoint = %s", resp.Env.Data)
	}
	if got, _ := s.storedSecret(t, s.Account.ID); got != *rotated.Secret {
		t.Fatal("the stored secret is not the rotated one")
	}

	if logs := s.Logs.String(); strings.Contains(logs, secret) || strings.Contains(logs, *rotated.Secret) {
		t.Fatal("a secret was logged")
	}

	resp = doJSON(t, http.MethodDelete, url, s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	requireErrorEnvelope(t, doJSON(t, http.MethodGet, url, s.Writer, nil), http.StatusNotFound)
	requireErrorEnvelope(t, doJSON(t, http.MethodDelete, url, s.Writer, nil), http.StatusNotFound)
	requireErrorEnvelope(t, doJSON(t, http.MethodPost, url+"/secret/rotate", s.Writer, nil), http.StatusNotFound)
}

// TestNotificationEndpoint_Validation: a body without a usable url is a
// 400 naming the field url, with the client_url rules and the destination
// policy; nothing is stored.
func TestNotificationEndpoint_Validation(t *testing.T) {
	s := newIncidentsAPI(t)
	url := s.endpointURL(s.Account.ID)
	tests := []struct {
		name    string
		body    any
		field   string // "" when the 400 names no field
		message string // in user_message
	}{
		{"Missing", map[string]any{}, "url", "url is required"},
		{"Null", map[string]any{"url": nil}, "url", "url is required"},
		{"NotAString", map[string]any{"url": 5}, "url", "must be of type string"},
		{"Empty", map[string]any{"url": ""}, "url", "url is required"},
		{"Relative", map[string]any{"url": "/notices"}, "url", "absolute http or https URL"},
		{"OtherScheme", map[string]any{"url": "ftp://" + publicHost + "/n"}, "url", "http or https"},
		{"Credentials", map[string]any{"url": "https://me:pw@" + publicHost + "/n"}, "url", "user name or password"},
		{"Loopback", map[string]any{"url": "https://" + loopbackHost + "/n"}, "url", "loopback"},
		{"PrivateLiteral", map[string]any{"url": "http://10.0.0.7/n"}, "url", "private"},
		{"Unresolvable", map[string]any{"url": "https://nowhere.invalid/n"}, "url", "could not be resolved"},
		{"TooLong", map[string]any{"url": "https://" + publicHost + "/" + strings.Repeat("a", 2048)}, "url", "at most 2048"},
		{"NotJSON", "url=https://" + publicHost, "", "not valid JSON"},
		{"NotAnObject", `["https://` + publicHost + `"]`, "", "JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, url, s.Writer, tt.body)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if tt.field != "" && !strings.HasPrefix(resp.Env.Status.DeveloperMessage, `invalid field "`+tt.field+`"`) {
				t.Errorf("developer_message = %q, want it to name the field %q", resp.Env.Status.DeveloperMessage, tt.field)
			}
			if !strings.Contains(resp.Env.Status.UserMessage, tt.message) || strings.Contains(resp.Env.Status.UserMessage, "client_url") {
				t.Errorf("user_message = %q, want %q and no client_url", resp.Env.Status.UserMessage, tt.message)
			}
		})
	}
	var n int
	if err := s.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM account_notification_endpoints`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("stored endpoints: %d (%v), want none", n, err)
	}
}

// TestNotificationEndpoint_Access: reading takes read permission, every
// change takes the permission that changes webhooks; another account's
// credential is refused on this account's path, and each account sees only
// its own endpoint.
func TestNotificationEndpoint_Access(t *testing.T) {
	s := newIncidentsAPI(t)
	body := map[string]any{"url": "https://" + publicHost + "/notices"}
	requireStatus(t, doJSON(t, http.MethodPut, s.endpointURL(s.Account.ID), s.Writer, body), http.StatusCreated)

	readOnly := s.mustCreateUser(t, s.Account.ID, "read_only", "read_only").Token
	readOnlyToken := s.mustCreateServiceToken(t, s.Account.ID, "read_only").Token
	memberToken := s.mustCreateServiceToken(t, s.Account.ID, "member").Token
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	devPlan := s.mustCreateAccount(t, webhooks.PlanDeveloper)
	devAdmin := s.mustCreateUser(t, devPlan.ID, "developer", "account_admin").Token

	tests := []struct {
		name      string
		token     string
		accountID int64
		read      int // GET
		write     int // PUT (the URL of an existing endpoint), rotate
	}{
		{"Writer", s.Writer, s.Account.ID, http.StatusOK, http.StatusOK},
		{"TeamMemberServiceToken", memberToken, s.Account.ID, http.StatusOK, http.StatusOK},
		{"ReadOnlyUser", readOnly, s.Account.ID, http.StatusOK, http.StatusForbidden},
		{"ReadOnlyServiceToken", readOnlyToken, s.Account.ID, http.StatusOK, http.StatusForbidden},
		{"AnotherAccountsCredential", otherWriter, s.Account.ID, http.StatusForbidden, http.StatusForbidden},
		{"AnotherAccountHasNone", otherWriter, other.ID, http.StatusNotFound, 0},
		{"DeveloperPlan", devAdmin, devPlan.ID, http.StatusForbidden, http.StatusForbidden},
		{"NoCredential", "", s.Account.ID, http.StatusUnauthorized, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := s.endpointURL(tt.accountID)
			check := func(resp *testResponse, want int) {
				t.Helper()
				if want >= 400 {
					requireErrorEnvelope(t, resp, want)
				} else {
					requireStatus(t, resp, want)
				}
			}
			resp := doJSON(t, http.MethodGet, url, tt.token, nil)
			check(resp, tt.read)
			if tt.read == http.StatusOK && !strings.Contains(string(resp.Body), publicHost+"/notices") {
				t.Errorf("GET = %s, want the account's endpoint", resp.Body)
			}
			if tt.write == 0 {
				return
			}
			check(doJSON(t, http.MethodPut, url, tt.token, body), tt.write)
			check(doJSON(t, http.MethodPost, url+"/secret/rotate", tt.token, nil), tt.write)
			if tt.write != http.StatusOK {
				check(doJSON(t, http.MethodDelete, url, tt.token, nil), tt.write)
			}
		})
	}
	// The endpoint survived every refused change.
	requireStatus(t, doJSON(t, http.MethodGet, s.endpointURL(s.Account.ID), s.Writer, nil), http.StatusOK)
	// A member of the other account deletes only its own (none).
	requireErrorEnvelope(t, doJSON(t, http.MethodDelete, s.endpointURL(other.ID), otherWriter, nil), http.StatusNotFound)
	requireStatus(t, doJSON(t, http.MethodGet, s.endpointURL(s.Account.ID), s.Writer, nil), http.StatusOK)
}

// TestNotificationEndpoint_ConcurrentCreatesShowTheStoredSecret: of PUTs
// racing to make the endpoint, exactly one answers 201 with a secret, and
// it is the one stored.
func TestNotificationEndpoint_ConcurrentCreatesShowTheStoredSecret(t *testing.T) {
	s := newIncidentsAPI(t)
	url := s.endpointURL(s.Account.ID)
	const n = 8
	bodies := make([]any, n)
	for i := range bodies {
		bodies[i] = map[string]any{"url": fmt.Sprintf("https://%s/notices/%d", publicHost, i)}
	}
	var secrets []string
	for _, r := range sendAll(t, http.MethodPut, repeat(url, n), s.Writer, bodies) {
		switch r.code {
		case http.StatusCreated:
			var env struct {
				Data endpointItem `json:"data"`
			}
			if err := json.Unmarshal(r.body, &env); err != nil || env.Data.Secret == nil {
				t.Fatalf("201 without a secret: %s", r.body)
			}
			secrets = append(secrets, *env.Data.Secret)
		case http.StatusOK:
			if bytes.Contains(r.body, []byte(`"secret"`)) {
				t.Errorf("200 shows a secret: %s", r.body)
			}
		default:
			t.Fatalf("PUT = %d %s", r.code, r.body)
		}
	}
	if len(secrets) != 1 {
		t.Fatalf("%d answers showed a secret, want exactly 1", len(secrets))
	}
	if got, _ := s.storedSecret(t, s.Account.ID); got != secrets[0] {
		t.Fatal("the secret shown is not the one stored")
	}
}
