package worker_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/activities"
	"github.com/jobhooks/jobhooks/config"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/internal/enginetest"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/webhooksettings"
	"github.com/jobhooks/jobhooks/worker"
)

// settingsStore is the delivery settings store of e, sealing with the
// worker's keys.
func (e *env) settingsStore() *webhooksettings.Store {
	e.t.Helper()
	keys, err := config.ParseSecretKeys(e.cfg.SecretKeys)
	if err != nil {
		e.t.Fatal(err)
	}
	box, err := secrets.NewBox(keys)
	if err != nil {
		e.t.Fatal(err)
	}
	return webhooksettings.NewStore(e.db.Pool, box)
}

// setSettings applies u to the delivery settings of webhook id of e's
// account, as the API does.
func (e *env) setSettings(id string, u webhooksettings.Update) {
	e.t.Helper()
	if err := u.Problems(time.Now()).Err(); err != nil {
		e.t.Fatalf("settings: %v", err)
	}
	if _, err := e.settingsStore().Update(context.Background(), e.account.ID, id, u, time.Now()); err != nil {
		e.t.Fatalf("settings: %v", err)
	}
}

func headerInputs(kv ...string) *[]webhooksettings.HeaderInput {
	var hs []webhooksettings.HeaderInput
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		hs = append(hs, webhooksettings.HeaderInput{Name: kv[i], Value: &v, Secret: strings.HasPrefix(kv[i], "X-Secret")})
	}
	return &hs
}

// TestDeliver_CustomHeaders: a webhook's custom headers, secret ones in
// clear, go out with its signed deliveries and its tests; a change reaches
// deliveries made SettingsFreshFor after it.
func TestDeliver_CustomHeaders(t *testing.T) {
	e := newEnv(t, true, nil)
	rc := newReceiver(t, nil)
	sub, secret := e.subscribe(rc.URL+"/hook", allTypes, nil, true)
	rc.setSecret(secret)
	plain, _ := e.subscribe(rc.URL+"/plain", allTypes, nil, true)
	e.setSettings(sub.ID, webhooksettings.Update{Headers: headerInputs("X-Team", "data platform", "X-Secret-Key", "sk_live_e2e")})

	ev := e.ingest(webhooks.EventRunCompleted, 42, "", sub.ID, plain.ID)
	if d := e.record(ev, sub.ID); d.Status != deliveries.StatusSucceeded {
		t.Fatalf("delivery = %+v", d)
	}
	var got, other *received
	for _, r := range rc.got() {
		if strings.Contains(string(r.Body), ev) {
			switch r.Path {
			case "/hook":
				got = &r
			case "/plain":
				other = &r
			}
		}
	}
	if got == nil || other == nil {
		t.Fatal("the receiver did not get both deliveries")
	}
	if !got.Signed || got.Header.Get("X-Team") != "data platform" || got.Header.Get("X-Secret-Key") != "sk_live_e2e" {
		t.Errorf("delivery headers = %v (signed %v)", got.Header, got.Signed)
	}
	if other.Header.Get("X-Team") != "" || other.Header.Get("X-Secret-Key") != "" {
		t.Errorf("another webhook got the headers: %v", other.Header)
	}

	e.setSettings(sub.ID, webhooksettings.Update{Headers: headerInputs("X-Team", "changed")})
	time.Sleep(activities.SettingsFreshFor)
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+sub.ID+"/test"), e.token, nil)
	if code != http.StatusOK || out["data"].(map[string]any)["verification_status_code"] != "200" {
		t.Fatalf("test = %d %v", code, out)
	}
	last := rc.got()[len(rc.got())-1]
	if last.Header.Get("X-Team") != "changed" || last.Header.Get("X-Secret-Key") != "" || !last.Signed {
		t.Errorf("after the change, the test delivery's headers = %v", last.Header)
	}
	// The secret header value never enters a Temporal history: the
	// deliveries' workflow (the webhook's shard) holds outcomes only. The
	// shard may have continued as new since the delivery (its last runs
	// are read), and the round that sent it writes its outcomes into the
	// history when the round ends, which may be after the record is in
	// the database: wait for the history to name the delivery.
	named := func(h string) bool { return strings.Contains(h, ev) || strings.Contains(h, e.deliveryID(ev, sub.ID)) }
	h := fetchRuns(t, e.temporal, e.shardOf(sub.ID), 5).String()
	for deadline := time.Now().Add(20 * time.Second); !named(h) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		h = fetchRuns(t, e.temporal, e.shardOf(sub.ID), 5).String()
	}
	if !named(h) {
		t.Errorf("the shard's history does not name the delivery: the check below would prove nothing")
	} else if strings.Contains(h, "sk_live_e2e") {
		t.Error("the secret header value is in the shard's Temporal history")
	}
}

// mtlsReceiver is a loopback HTTPS receiver that only completes handshakes
// with a client certificate issued by its client CA, and checks
// signatures as a spec receiver does.
type mtlsReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	secrets map[string]string // path -> hmac_secret
	got     []mtlsRequest
}

type mtlsRequest struct {
	Path, ClientCN string
	Signed         bool
	Body           string
}

func newMTLSReceiver(t *testing.T, serverCA, clientCA *testcerts.CA) *mtlsReceiver {
	t.Helper()
	rc := &mtlsReceiver{secrets: map[string]string{}}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		mac := hmac.New(sha256.New, []byte(rc.secrets[r.URL.Path]))
		mac.Write(body)
		req := mtlsRequest{Path: r.URL.Path, Body: string(body),
			Signed: hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.Header.Get("Authorization")))}
		if len(r.TLS.PeerCertificates) > 0 {
			req.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		rc.got = append(rc.got, req)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	rc.TLS = serverCA.ServerTLS(t, clientCA)
	rc.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	rc.StartTLS()
	t.Cleanup(rc.Close)
	return rc
}

func (rc *mtlsReceiver) requests() []mtlsRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]mtlsRequest(nil), rc.got...)
}

// TestDeliver_MutualTLS: a receiver that requires a client certificate
// gets signed deliveries from the webhook that presents one its CA issued;
// another webhook's deliveries, without a certificate, are refused in the
// handshake and their attempts record why, in Recent Deliveries and in the
// test endpoint's answer; once that webhook has a certificate, it gets
// through too.
func TestDeliver_MutualTLS(t *testing.T) {
	// The refused deliveries run out their six attempts (a refused
	// handshake counts as an outage: the breaker opens, and with the
	// default on_outage "retry" they fail as the spec says).
	e := newEnv(t, false, nil)
	serverCA, clientCA := testcerts.NewCA(t, "Receiver server CA"), testcerts.NewCA(t, "Receiver client CA")
	enginetest.StartWorker(t, worker.Deps{Config: e.cfg, Logger: discardLogger(), Pool: e.db.Pool, Temporal: e.temporal,
		DeliveryRootCAs: serverCA.Pool()})
	rc := newMTLSReceiver(t, serverCA, clientCA)
	withCert, secretA := e.subscribe(rc.URL+"/with-cert", allTypes, nil, true)
	without, secretB := e.subscribe(rc.URL+"/without", allTypes, nil, true)
	rc.mu.Lock()
	rc.secrets["/with-cert"], rc.secrets["/without"] = secretA, secretB
	rc.mu.Unlock()
	certPEM, keyPEM := clientCA.Issue(t, testcerts.Leaf{CommonName: "jobhooks webhook client"})
	e.setSettings(withCert.ID, webhooksettings.Update{Certificate: &webhooksettings.CertificateInput{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM}})

	ev := e.ingest(webhooks.EventRunCompleted, 7, "", withCert.ID, without.ID)
	if d := e.record(ev, withCert.ID); d.Status != deliveries.StatusSucceeded || d.LastStatusCode != http.StatusNoContent {
		t.Fatalf("with a certificate: %+v", d)
	}
	var arrived []mtlsRequest
	for _, r := range rc.requests() {
		if strings.Contains(r.Body, ev) {
			arrived = append(arrived, r)
		}
	}
	if len(arrived) != 1 || arrived[0].Path != "/with-cert" || !arrived[0].Signed || arrived[0].ClientCN != "jobhooks webhook client" {
		t.Fatalf("the receiver got %+v, want one signed delivery to /with-cert from the webhook's certificate", arrived)
	}

	refused := e.record(ev, without.ID)
	if refused.Status != deliveries.StatusFailed || len(refused.Attempts) == 0 {
		t.Fatalf("without a certificate: %+v", refused)
	}
	for _, a := range refused.Attempts {
		if a.ErrorKind != deliveries.KindConnection || a.StatusCode != 0 ||
			!strings.Contains(a.ErrorMessage, "refused the TLS handshake") || !strings.Contains(a.ErrorMessage, "presents no client certificate") {
			t.Errorf("attempt %d records %q (%s), want the refused handshake and why", a.Number, a.ErrorMessage, a.ErrorKind)
		}
	}
	code, out := e.call(http.MethodGet, accountPath(e, "/subscription/"+without.ID+"/test"), e.token, nil)
	data, _ := out["data"].(map[string]any)
	if msg, _ := data["verification_error"].(string); code != http.StatusOK || !strings.Contains(msg, "presents no client certificate") || data["verification_status_code"] != "0" {
		t.Errorf("test without a certificate = %d %v", code, out)
	}

	e.setSettings(without.ID, webhooksettings.Update{Certificate: &webhooksettings.CertificateInput{CertificatePEM: certPEM, PrivateKeyPEM: keyPEM}})
	time.Sleep(activities.SettingsFreshFor)
	ev = e.ingest(webhooks.EventRunErrored, 7, "", without.ID)
	if d := e.record(ev, without.ID); d.Status != deliveries.StatusSucceeded {
		t.Fatalf("after its certificate was set: %+v", d)
	}
}
