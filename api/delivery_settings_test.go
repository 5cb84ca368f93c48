package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// settingsURL is the delivery settings URL of webhook id in accountID.
func (s *subsAPI) settingsURL(accountID int64, id string) string {
	return s.subURL(accountID, id) + "/delivery-settings"
}

// settingsItem is delivery settings as the API returns them.
type settingsItem struct {
	WebhookID            string   `json:"webhook_id"`
	MaxRequestsPerSecond *float64 `json:"max_requests_per_second"`
	Headers              []struct {
		Name   string  `json:"name"`
		Value  *string `json:"value"`
		Secret bool    `json:"secret"`
	} `json:"headers"`
	ClientCertificate *struct {
		Subject           string `json:"subject"`
		Issuer            string `json:"issuer"`
		NotBefore         string `json:"not_before"`
		NotAfter          string `json:"not_after"`
		FingerprintSHA256 string `json:"fingerprint_sha256"`
	} `json:"client_certificate"`
	OnOutage  string  `json:"on_outage"`
	UpdatedAt *string `json:"updated_at"`
}

// mustOpenSettings returns the settings of id as the sender sees them,
// secrets opened.
func (s *subsAPI) mustOpenSettings(t *testing.T, id string) webhooksettings.Sending {
	t.Helper()
	got, err := webhooksettings.NewStore(s.DB.Pool, s.Box).ForSending(t.Context(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	return got[id]
}

const apiSecretValue = "sk_live_api-secret-value-7d1f"

func TestDeliverySettings_DefaultsThenRoundTrip(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)

	resp := doJSON(t, http.MethodGet, url, s.Writer, nil)
	requireStatus(t, resp, http.StatusOK)
	want := `{"webhook_id":"` + sub.ID + `","max_requests_per_second":null,"headers":[],"client_certificate":null,"on_outage":"retry","format":"standard","notify_on":"every","filter":null,"pagerduty_routing_key":null,"pagerduty_routing_key_set":false,"updated_at":null}`
	if string(resp.Env.Data) != want {
		t.Fatalf("defaults = %s, want %s", resp.Env.Data, want)
	}

	ca := testcerts.NewCA(t, "API CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "api client"})
	resp = doJSON(t, http.MethodPut, url, s.Writer, map[string]any{
		"max_requests_per_second": 2.5,
		"headers": []map[string]any{
			{"name": "X-Team", "value": "data platform"},
			{"name": "X-Api-Key", "value": apiSecretValue, "secret": true},
		},
		"client_certificate": map[string]any{"certificate": cert, "private_key": key},
	})
	requireStatus(t, resp, http.StatusOK)
	var put settingsItem
	resp.decodeData(t, &put)
	if put.WebhookID != sub.ID || put.MaxRequestsPerSecond == nil || *put.MaxRequestsPerSecond != 2.5 || put.UpdatedAt == nil {
		t.Errorf("PUT answered %s", resp.Env.Data)
	}
	if len(put.Headers) != 2 || *put.Headers[0].Value != "data platform" || put.Headers[1].Value != nil || !put.Headers[1].Secret {
		t.Errorf("headers = %s; the secret's value must be null", resp.Env.Data)
	}
	if c := put.ClientCertificate; c == nil || !strings.Contains(c.Subject, "CN=api client") || !strings.Contains(c.Issuer, "CN=API CA") ||
		len(c.FingerprintSHA256) != 64 || c.NotAfter <= c.NotBefore {
		t.Errorf("client_certificate = %+v", put.ClientCertificate)
	}
	for _, body := range [][]byte{resp.Body, doJSON(t, http.MethodGet, url, s.Writer, nil).Body} {
		if bytes.Contains(body, []byte(apiSecretValue)) || bytes.Contains(body, []byte("PRIVATE KEY")) || bytes.Contains(body, []byte(strings.Split(key, "\n")[1])) {
			t.Fatalf("a secret is returned: %s", body)
		}
	}
	get := doJSON(t, http.MethodGet, url, s.Writer, nil)
	requireStatus(t, get, http.StatusOK)
	if !bytes.Equal(get.Env.Data, resp.Env.Data) {
		t.Errorf("GET %s\nPUT %s", get.Env.Data, resp.Env.Data)
	}

	// Sending a GET response back keeps everything, the secret value and
	// the certificate included.
	again := doJSON(t, http.MethodPut, url, s.Writer, []byte(get.Env.Data))
	requireStatus(t, again, http.StatusOK)
	opened := s.mustOpenSettings(t, sub.ID)
	if len(opened.Headers) != 2 || opened.Headers[1].Value != apiSecretValue || opened.Certificate == nil ||
		opened.Certificate.SHA256 != put.ClientCertificate.FingerprintSHA256 || *opened.MaxRequestsPerSecond != 2.5 {
		t.Errorf("after sending the GET back: %+v", opened)
	}

	// PUT replaces the rate and the headers; client_certificate null removes
	// the certificate.
	resp = doJSON(t, http.MethodPut, url, s.Writer, map[string]any{"client_certificate": nil})
	requireStatus(t, resp, http.StatusOK)
	if string(resp.Env.Data) != strings.Replace(want, `"updated_at":null`, `"updated_at":`+jsonString(t, resp, "updated_at"), 1) {
		t.Errorf("after a PUT of defaults: %s", resp.Env.Data)
	}
	if opened := s.mustOpenSettings(t, sub.ID); opened.Certificate != nil || len(opened.Headers) != 0 {
		t.Errorf("defaults kept something: %+v", opened)
	}
}

// jsonString returns the JSON text of member name of resp's data.
func jsonString(t *testing.T, resp *testResponse, name string) string {
	t.Helper()
	var m map[string]any
	resp.decodeData(t, &m)
	v, _ := m[name].(string)
	return `"` + v + `"`
}

// TestDeliverySettings_InvalidInputIs400NamingTheField: every refusal is a
// 400 in the error envelope whose developer_message names the field and
// whose user_message names the header; nothing is stored.
func TestDeliverySettings_InvalidInputIs400NamingTheField(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)
	requireStatus(t, doJSON(t, http.MethodPut, url, s.Writer, map[string]any{
		"max_requests_per_second": 7, "headers": []map[string]any{{"name": "X-Keep", "value": "kept"}},
	}), http.StatusOK)
	before := doJSON(t, http.MethodGet, url, s.Writer, nil).Env.Data

	ca := testcerts.NewCA(t, "Refusals CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "ok"})
	_, otherKey := ca.Issue(t, testcerts.Leaf{CommonName: "other"})
	expired, expiredKey := ca.Issue(t, testcerts.Leaf{CommonName: "old", NotBefore: time.Now().Add(-72 * time.Hour), NotAfter: time.Now().Add(-time.Minute)})
	header := func(name, value string) map[string]any {
		return map[string]any{"headers": []map[string]any{{"name": name, "value": value}}}
	}
	tests := []struct {
		name  string
		body  any
		field string // named in developer_message
		says  string // in user_message
	}{
		{"RateZero", map[string]any{"max_requests_per_second": 0}, "max_requests_per_second", "more than 0"},
		{"RateNegative", map[string]any{"max_requests_per_second": -3}, "max_requests_per_second", "at most 1000"},
		{"RateOver1000", map[string]any{"max_requests_per_second": 1000.5}, "max_requests_per_second", "at most 1000"},
		{"RateString", `{"max_requests_per_second": "10"}`, "max_requests_per_second", "number"},
		{"HeadersNotArray", `{"headers": {"X-A": "1"}}`, "headers", "array"},
		{"HeaderNotObject", `{"headers": ["X-A: 1"]}`, "headers[0]", "object"},
		{"HeaderValueNumber", `{"headers": [{"name": "X-A", "value": 5}]}`, "headers[0].value", "string"},
		{"HeaderSecretString", `{"headers": [{"name": "X-A", "value": "v", "secret": "yes"}]}`, "headers[0].secret", "boolean"},
		{"TooManyHeaders", map[string]any{"headers": manyHeaders(21)}, "headers", "At most 20"},
		{"HeaderNameNotToken", header("X Api Key", "v"), "headers[0].name", `"X Api Key"`},
		{"HeaderNameMissing", `{"headers": [{"value": "v"}]}`, "headers[0].name", "required"},
		{"Authorization", header("Authorization", "Bearer x"), "headers[0].name", `"Authorization"`},
		{"WebhookSignatureAnyCase", header("WEBHOOK-SIGNATURE", "v1,x"), "headers[0].name", `"WEBHOOK-SIGNATURE"`},
		{"WebhookID", header("webhook-id", "x"), "headers[0].name", `"webhook-id"`},
		{"WebhookTimestamp", header("Webhook-Timestamp", "1"), "headers[0].name", `"Webhook-Timestamp"`},
		{"DeliveryIDHeader", header("Webhook-Delivery-Id", "x"), "headers[0].name", `"Webhook-Delivery-Id"`},
		{"ContentType", header("Content-Type", "text/plain"), "headers[0].name", `"Content-Type"`},
		{"ContentLength", header("Content-Length", "1"), "headers[0].name", `"Content-Length"`},
		{"Host", header("Host", "evil.example"), "headers[0].name", `"Host"`},
		{"UserAgent", header("User-Agent", "x"), "headers[0].name", `"User-Agent"`},
		{"Connection", header("Connection", "close"), "headers[0].name", `"Connection"`},
		{"KeepAlive", header("Keep-Alive", "5"), "headers[0].name", `"Keep-Alive"`},
		{"ProxyAuthorization", header("Proxy-Authorization", "x"), "headers[0].name", `"Proxy-Authorization"`},
		{"TE", header("TE", "trailers"), "headers[0].name", `"TE"`},
		{"Trailer", header("Trailer", "x"), "headers[0].name", `"Trailer"`},
		{"TransferEncoding", header("Transfer-Encoding", "chunked"), "headers[0].name", `"Transfer-Encoding"`},
		{"Upgrade", header("Upgrade", "h2c"), "headers[0].name", `"Upgrade"`},
		{"ValueCRLF", header("X-A", "a\r\nX-Injected: 1"), "headers[0].value", `"X-A"`},
		{"ValueNUL", header("X-A", "a\x00b"), "headers[0].value", `"X-A"`},
		{"ValueInvalidUTF8Escape", `{"headers": [{"name": "X-A", "value": "a\ud800b"}]}`, "headers[0].value", "UTF-8"},
		{"ValueTooLong", header("X-A", strings.Repeat("v", 2049)), "headers[0].value", "2048"},
		{"ValueMissing", `{"headers": [{"name": "X-A"}]}`, "headers[0].value", "required"},
		{"DuplicateName", `{"headers": [{"name": "X-A", "value": "1"}, {"name": "x-a", "value": "2"}]}`, "headers[1].name", `"x-a"`},
		{"SecretToKeepUnknown", `{"headers": [{"name": "X-Never-Set", "secret": true}]}`, "headers[0].value", `"X-Never-Set"`},
		{"CertificateNotObject", `{"client_certificate": "PEM"}`, "client_certificate", "object"},
		{"CertificateWithoutKey", map[string]any{"client_certificate": map[string]any{"certificate": cert}}, "client_certificate.private_key", "required"},
		{"KeyWithoutCertificate", map[string]any{"client_certificate": map[string]any{"private_key": key}}, "client_certificate.certificate", "required"},
		{"KeyOfAnotherCertificate", map[string]any{"client_certificate": map[string]any{"certificate": cert, "private_key": otherKey}}, "client_certificate.private_key", "does not match"},
		{"CertificateExpired", map[string]any{"client_certificate": map[string]any{"certificate": expired, "private_key": expiredKey}}, "client_certificate.certificate", "expired"},
		{"CertificateNotPEM", map[string]any{"client_certificate": map[string]any{"certificate": "MIIB...", "private_key": key}}, "client_certificate.certificate", "PEM"},
		{"KeepingNoCertificate", `{"client_certificate": {"subject": "CN=x"}}`, "client_certificate.certificate", "No client certificate"},
		{"OnOutageUnknown", `{"on_outage": "wait"}`, "on_outage", `"hold"`},
		{"OnOutageNotString", `{"on_outage": true}`, "on_outage", "on_outage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, url, s.Writer, tt.body)
			requireFieldRefused(t, resp, tt.field, tt.says)
			if after := doJSON(t, http.MethodGet, url, s.Writer, nil).Env.Data; !bytes.Equal(after, before) {
				t.Errorf("a refused PUT changed the settings:\n%s\n%s", before, after)
			}
		})
	}
	for _, body := range []string{`null`, `[]`, `{"headers": [] `, ``} {
		resp := doJSON(t, http.MethodPut, url, s.Writer, body)
		requireErrorEnvelope(t, resp, http.StatusBadRequest)
	}
}

func manyHeaders(n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"name": "X-H" + strings.Repeat("a", i), "value": "v"}
	}
	return out
}

// TestDeliverySettings_Permissions: reading the settings needs what reading
// the webhook needs, changing them what updating it needs (spec 5.1).
func TestDeliverySettings_Permissions(t *testing.T) {
	s := newSubsAPI(t, nil)
	accounts := map[string]webhooks.Account{}
	existing := map[string]string{}
	for _, plan := range webhooks.Plans {
		accounts[plan] = s.mustCreateAccount(t, plan)
		existing[plan] = webhooks.NewID(webhooks.SubscriptionIDPrefix)
		if plan == webhooks.PlanDeveloper {
			continue
		}
		admin := s.mustCreateServiceToken(t, accounts[plan].ID, "account_admin").Token
		resp := doJSON(t, http.MethodPost, s.subsURL(accounts[plan].ID), admin, validBody())
		requireStatus(t, resp, http.StatusCreated)
		var sub subItem
		resp.decodeData(t, &sub)
		existing[plan] = sub.ID
	}
	tests := []struct {
		name     string
		plan     string
		token    bool
		license  string
		sets     []string
		canRead  bool
		canWrite bool
	}{
		{"TeamUserDeveloperLicense", webhooks.PlanTeam, false, "developer", []string{"member"}, true, true},
		{"TeamUserReadOnly", webhooks.PlanTeam, false, "read_only", []string{"account_admin"}, true, false},
		{"TeamTokenMember", webhooks.PlanTeam, true, "", []string{"member"}, true, true},
		{"TeamTokenReadOnly", webhooks.PlanTeam, true, "", []string{"read_only"}, true, false},
		{"EnterpriseUserDeveloperSet", webhooks.PlanEnterprise, false, "developer", []string{"developer"}, true, true},
		{"EnterpriseUserMember", webhooks.PlanEnterprise, false, "developer", []string{"member"}, true, false},
		{"EnterpriseTokenAccountAdmin", webhooks.PlanEnterprise, true, "", []string{"account_admin"}, true, true},
		{"EnterpriseTokenJobAdmin", webhooks.PlanEnterprise, true, "", []string{"job_admin"}, true, false},
		{"DeveloperPlanUser", webhooks.PlanDeveloper, false, "developer", []string{"account_admin"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acct := accounts[tt.plan]
			var token string
			if tt.token {
				token = s.mustCreateServiceToken(t, acct.ID, tt.sets...).Token
			} else {
				token = s.mustCreateUser(t, acct.ID, tt.license, tt.sets...).Token
			}
			url := s.settingsURL(acct.ID, existing[tt.plan])
			resp := doJSON(t, http.MethodGet, url, token, nil)
			if tt.canRead {
				requireStatus(t, resp, http.StatusOK)
			} else {
				requireErrorEnvelope(t, resp, http.StatusForbidden)
			}
			body := map[string]any{"headers": []map[string]any{{"name": "X-Set-By", "value": tt.name}}}
			resp = doJSON(t, http.MethodPut, url, token, body)
			if tt.canWrite {
				requireStatus(t, resp, http.StatusOK)
				return
			}
			requireErrorEnvelope(t, resp, http.StatusForbidden)
			if tt.plan != webhooks.PlanDeveloper && strings.Contains(dumpTables(t, s.testAPI, "webhook_delivery_settings"), tt.name) {
				t.Error("a refused PUT stored its headers")
			}
		})
	}
	// Write permission is checked before the body is read: a reader's
	// malformed body is a 403, not a 400.
	reader := s.mustCreateUser(t, accounts[webhooks.PlanTeam].ID, "read_only", "read_only").Token
	requireErrorEnvelope(t, doJSON(t, http.MethodPut, s.settingsURL(accounts[webhooks.PlanTeam].ID, existing[webhooks.PlanTeam]), reader, `{"headers": 5}`), http.StatusForbidden)
}

// TestDeliverySettings_AccountIsolation: another account's webhook gets the
// answer a missing webhook gets, through both endpoints, and stays as it
// was.
func TestDeliverySettings_AccountIsolation(t *testing.T) {
	s := newSubsAPI(t, nil)
	mine := s.mustCreateSub(t, nil)
	other := s.mustCreateAccount(t, webhooks.PlanTeam)
	otherWriter := s.mustCreateUser(t, other.ID, "developer", "member").Token
	resp := doJSON(t, http.MethodPost, s.subsURL(other.ID), otherWriter, validBody())
	requireStatus(t, resp, http.StatusCreated)
	var theirs subItem
	resp.decodeData(t, &theirs)
	theirURL := s.settingsURL(other.ID, theirs.ID)
	requireStatus(t, doJSON(t, http.MethodPut, theirURL, otherWriter, map[string]any{
		"headers": []map[string]any{{"name": "X-Theirs", "value": "secret-of-theirs", "secret": true}},
	}), http.StatusOK)
	theirsBefore := doJSON(t, http.MethodGet, theirURL, otherWriter, nil).Env.Data
	missing := webhooks.NewID(webhooks.SubscriptionIDPrefix)
	hijack := map[string]any{"headers": []map[string]any{{"name": "X-Hijack", "value": "1"}}}

	for _, method := range []string{http.MethodGet, http.MethodPut} {
		t.Run(method, func(t *testing.T) {
			// Their webhook's id under my account: as if it did not exist.
			gotTheirs := doJSON(t, method, s.settingsURL(s.Account.ID, theirs.ID), s.Writer, hijack)
			gotMissing := doJSON(t, method, s.settingsURL(s.Account.ID, missing), s.Writer, hijack)
			requireNotFoundWithoutPermission(t, gotTheirs)
			if !bytes.Equal(gotTheirs.Body, gotMissing.Body) {
				t.Errorf("another account's webhook %s\nbut a missing one %s", gotTheirs.Body, gotMissing.Body)
			}
			// My credential on their account: refused whatever the webhook.
			gotTheirs = doJSON(t, method, theirURL, s.Writer, hijack)
			gotMissing = doJSON(t, method, s.settingsURL(other.ID, missing), s.Writer, hijack)
			requireErrorEnvelope(t, gotTheirs, http.StatusForbidden)
			if !bytes.Equal(gotTheirs.Body, gotMissing.Body) {
				t.Errorf("their account's webhook %s\nbut a missing one %s", gotTheirs.Body, gotMissing.Body)
			}
		})
	}
	if after := doJSON(t, http.MethodGet, theirURL, otherWriter, nil).Env.Data; !bytes.Equal(after, theirsBefore) {
		t.Errorf("their settings changed: %s -> %s", theirsBefore, after)
	}
	requireStatus(t, doJSON(t, http.MethodGet, s.settingsURL(s.Account.ID, mine.ID), s.Writer, nil), http.StatusOK)
	if dump := dumpTables(t, s.testAPI, "webhook_delivery_settings"); strings.Contains(dump, "X-Hijack") {
		t.Errorf("a hijack was stored: %s", dump)
	}
}

// TestDeliverySettings_SubscriptionObjectUnchanged: setting every delivery
// setting leaves the spec's subscription object byte for byte as it was,
// in get and in list.
func TestDeliverySettings_SubscriptionObjectUnchanged(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	getBefore := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID), s.Writer, nil)
	listBefore := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil)
	requireStatus(t, getBefore, http.StatusOK)

	ca := testcerts.NewCA(t, "Unchanged CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "unchanged"})
	requireStatus(t, doJSON(t, http.MethodPut, s.settingsURL(s.Account.ID, sub.ID), s.Writer, map[string]any{
		"max_requests_per_second": 10,
		"headers":                 []map[string]any{{"name": "X-A", "value": "1"}, {"name": "X-B", "value": "2", "secret": true}},
		"client_certificate":      map[string]any{"certificate": cert, "private_key": key},
	}), http.StatusOK)

	getAfter := doJSON(t, http.MethodGet, s.subURL(s.Account.ID, sub.ID), s.Writer, nil)
	listAfter := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID), s.Writer, nil)
	if !bytes.Equal(getBefore.Body, getAfter.Body) {
		t.Errorf("GET subscription changed:\n%s\n%s", getBefore.Body, getAfter.Body)
	}
	if !bytes.Equal(listBefore.Body, listAfter.Body) {
		t.Errorf("list changed:\n%s\n%s", listBefore.Body, listAfter.Body)
	}
}

// TestDeliverySettings_SecretsNeitherStoredInClearNorLogged: the table rows
// hold no secret header value or private key, and neither do the logs.
func TestDeliverySettings_SecretsNeitherStoredInClearNorLogged(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	ca := testcerts.NewCA(t, "Rest CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "rest", RSA: true})
	resp := doJSON(t, http.MethodPut, s.settingsURL(s.Account.ID, sub.ID), s.Writer, map[string]any{
		"headers":            []map[string]any{{"name": "X-Api-Key", "value": apiSecretValue, "secret": true}},
		"client_certificate": map[string]any{"certificate": cert, "private_key": key},
	})
	requireStatus(t, resp, http.StatusOK)
	keyLines := strings.Split(strings.TrimSpace(key), "\n")
	dump := dumpTables(t, s.testAPI, "webhook_delivery_settings", "webhook_subscriptions")
	logs := s.Logs.String()
	for where, text := range map[string]string{"table rows": dump, "logs": logs} {
		for _, clear := range []string{apiSecretValue, "api-secret-value", "PRIVATE KEY", keyLines[1], keyLines[len(keyLines)-2]} {
			if strings.Contains(text, clear) {
				t.Errorf("the %s hold %q", where, clear)
			}
		}
	}
	if !strings.Contains(logs, "webhook delivery settings updated") {
		t.Errorf("the update is not logged:\n%s", logs)
	}
	if opened := s.mustOpenSettings(t, sub.ID); opened.Headers[0].Value != apiSecretValue || opened.Certificate.KeyPEM != key {
		t.Errorf("the sealed values do not open to what was sent")
	}
}

// TestDeliverySettings_OnOutage: on_outage shows the service's default
// until the webhook chooses; PUT sets it and, absent or null, goes back to
// the default; the choice is what the delivery core reads.
func TestDeliverySettings_OnOutage(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	url := s.settingsURL(s.Account.ID, sub.ID)
	stored := func() *string {
		var v *string
		if err := s.DB.Pool.QueryRow(t.Context(), `SELECT on_outage FROM webhook_delivery_settings WHERE subscription_id = $1`, sub.ID).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, step := range []struct {
		name       string
		body       any
		want       string
		wantStored *string
	}{
		{"Hold", map[string]any{"on_outage": "hold"}, "hold", ptr("hold")},
		{"Retry", map[string]any{"on_outage": "retry"}, "retry", ptr("retry")},
		{"HoldAgain", map[string]any{"on_outage": "hold", "max_requests_per_second": 5}, "hold", ptr("hold")},
		{"NullIsTheDefault", map[string]any{"on_outage": nil}, "retry", nil},
		{"HoldThenAbsentIsTheDefault", map[string]any{"on_outage": "hold"}, "hold", ptr("hold")},
		{"Absent", map[string]any{}, "retry", nil},
	} {
		resp := doJSON(t, http.MethodPut, url, s.Writer, step.body)
		requireStatus(t, resp, http.StatusOK)
		var put settingsItem
		resp.decodeData(t, &put)
		var get settingsItem
		doJSON(t, http.MethodGet, url, s.Writer, nil).decodeData(t, &get)
		got := stored()
		if put.OnOutage != step.want || get.OnOutage != step.want || (got == nil) != (step.wantStored == nil) ||
			(got != nil && *got != *step.wantStored) {
			t.Errorf("%s: PUT answered %q, GET %q, stored %v; want %q, stored %v", step.name, put.OnOutage, get.OnOutage, got, step.want, step.wantStored)
		}
	}
}

func ptr[T any](v T) *T { return &v }
