package webhooksettings_test

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/internal/testcerts"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

func ptr[T any](v T) *T { return &v }

func headers(hs ...webhooksettings.HeaderInput) *[]webhooksettings.HeaderInput { return &hs }

func plain(name, value string) webhooksettings.HeaderInput {
	return webhooksettings.HeaderInput{Name: name, Value: &value}
}

// firstProblem is the field and message of u's first problem ("" when none).
func firstProblem(t *testing.T, u webhooksettings.Update) (string, string) {
	t.Helper()
	p := u.Problems(time.Now())
	if len(p) == 0 {
		return "", ""
	}
	var e *webhooks.Error
	if !errors.As(p.Err(), &e) || e.Code != webhooks.EINVALID {
		t.Fatalf("problem %v is not an EINVALID *webhooks.Error", p)
	}
	return e.Field, e.Message
}

func TestUpdateProblems_Rate(t *testing.T) {
	tests := []struct {
		name  string
		rate  *float64
		valid bool
	}{
		{"NoLimit", nil, true},
		{"Fraction", ptr(0.5), true},
		{"One", ptr(1.0), true},
		{"AtMost1000", ptr(1000.0), true},
		{"Zero", ptr(0.0), false},
		{"Negative", ptr(-1.0), false},
		{"Over1000", ptr(1000.001), false},
		{"NaN", ptr(math.NaN()), false},
		{"Infinite", ptr(math.Inf(1)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, msg := firstProblem(t, webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: tt.rate}})
			if tt.valid && field != "" {
				t.Fatalf("problem %s: %s, want none", field, msg)
			}
			if !tt.valid && field != "max_requests_per_second" {
				t.Fatalf("problem field = %q (%s), want max_requests_per_second", field, msg)
			}
		})
	}
}

func TestUpdateProblems_Headers(t *testing.T) {
	many := make([]webhooksettings.HeaderInput, 21)
	for i := range many {
		many[i] = plain(fmt.Sprintf("X-H%d", i), "v")
	}
	big := make([]webhooksettings.HeaderInput, 5)
	for i := range big {
		big[i] = plain(fmt.Sprintf("X-Big%d", i), strings.Repeat("v", 2000))
	}
	tests := []struct {
		name    string
		headers *[]webhooksettings.HeaderInput
		field   string // "" means valid
		names   string // text the message must hold (the header's name)
	}{
		{"None", headers(), "", ""},
		{"Plain", headers(plain("X-Team", "data platform")), "", ""},
		{"Secret", headers(webhooksettings.HeaderInput{Name: "X-Api-Key", Value: ptr("k"), Secret: true}), "", ""},
		{"SecretKept", headers(webhooksettings.HeaderInput{Name: "X-Api-Key", Secret: true}), "", ""},
		{"TokenPunctuation", headers(plain("X-A!#$%&'*+-.^_`|~1", "v")), "", ""},
		{"TabInside", headers(plain("X-Tab", "a\tb")), "", ""},
		{"UTF8Value", headers(plain("X-Name", "Zoë")), "", ""},
		{"Twenty", headers(many[:20]...), "", ""},
		{"TwentyOne", headers(many...), "headers", ""},
		{"TooBigTogether", headers(big...), "headers", ""},
		{"NameEmpty", headers(plain("", "v")), "headers[0].name", ""},
		{"NameSpace", headers(plain("X Bad", "v")), "headers[0].name", `"X Bad"`},
		{"NameColon", headers(plain("X-Bad:", "v")), "headers[0].name", `"X-Bad:"`},
		{"NameNonASCII", headers(plain("X-Ü", "v")), "headers[0].name", `"X-Ü"`},
		{"NameTooLong", headers(plain("X-"+strings.Repeat("a", 255), "v")), "headers[0].name", ""},
		{"Duplicate", headers(plain("X-A", "1"), plain("x-a", "2")), "headers[1].name", `"x-a"`},
		{"ValueMissing", headers(webhooksettings.HeaderInput{Name: "X-A"}), "headers[0].value", ""},
		{"ValueEmpty", headers(plain("X-A", "")), "headers[0].value", ""},
		{"ValueCR", headers(plain("X-A", "a\rb")), "headers[0].value", `"X-A"`},
		{"ValueLF", headers(plain("X-A", "a\nInjected: 1")), "headers[0].value", `"X-A"`},
		{"ValueNUL", headers(plain("X-A", "a\x00b")), "headers[0].value", `"X-A"`},
		{"ValueDEL", headers(plain("X-A", "a\x7fb")), "headers[0].value", `"X-A"`},
		{"SecretValueCRLF", headers(webhooksettings.HeaderInput{Name: "X-Key", Value: ptr("a\r\nb"), Secret: true}), "headers[0].value", `"X-Key"`},
		{"ValueLeadingSpace", headers(plain("X-A", " a")), "headers[0].value", `"X-A"`},
		{"ValueTooLong", headers(plain("X-A", strings.Repeat("v", 2049))), "headers[0].value", ""},
		{"ValueInvalidUTF8", headers(plain("X-A", "caf\xe9")), "headers[0].value", ""},
		{"SecondHeaderBad", headers(plain("X-A", "1"), plain("Bad Name", "2")), "headers[1].name", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, msg := firstProblem(t, webhooksettings.Update{Headers: tt.headers})
			if field != tt.field {
				t.Fatalf("problem field = %q (%s), want %q", field, msg, tt.field)
			}
			if !strings.Contains(msg, tt.names) {
				t.Errorf("message %q does not name %s", msg, tt.names)
			}
		})
	}
}

// Every header the service sets itself, the hop-by-hop headers and those
// the HTTP client derives are refused, whatever their case, with a 400
// naming the header.
func TestUpdateProblems_ReservedHeaders(t *testing.T) {
	for _, name := range []string{
		"Authorization", "authorization", "AUTHORIZATION",
		"webhook-id", "Webhook-Timestamp", "webhook-signature", "Webhook-Delivery-Id", "Webhook-Event-Id",
		"Webhook-Attempt", "Webhook-Anything-New",
		"Content-Type", "Content-Length", "Content-Encoding", "Host", "User-Agent", "Expect",
		"Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "TE", "Trailer",
		"Transfer-Encoding", "Upgrade",
	} {
		t.Run(name, func(t *testing.T) {
			field, msg := firstProblem(t, webhooksettings.Update{Headers: headers(plain(name, "v"))})
			if field != "headers[0].name" || !strings.Contains(msg, `"`+name+`"`) {
				t.Fatalf("problem = %q %q, want headers[0].name naming %q", field, msg, name)
			}
			if webhooksettings.Reserved(name) == "" {
				t.Errorf("Reserved(%q) is empty", name)
			}
		})
	}
	for _, name := range []string{"X-Api-Key", "Cookie", "Accept", "X-Webhook-Source", "Traceparent"} {
		if why := webhooksettings.Reserved(name); why != "" {
			t.Errorf("Reserved(%q) = %q, want allowed", name, why)
		}
	}
}

func TestUpdateProblems_Certificate(t *testing.T) {
	ca := testcerts.NewCA(t, "Test CA")
	other := testcerts.NewCA(t, "Other CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "client"})
	rsaCert, rsaKey := ca.Issue(t, testcerts.Leaf{CommonName: "rsa client", RSA: true})
	_, otherKey := other.Issue(t, testcerts.Leaf{CommonName: "other"})
	expired, expiredKey := ca.Issue(t, testcerts.Leaf{CommonName: "old", NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	future, futureKey := ca.Issue(t, testcerts.Leaf{CommonName: "later", NotBefore: time.Now().Add(time.Hour)})
	server, serverKey := ca.Issue(t, testcerts.Leaf{CommonName: "server", ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	encryptedKey := strings.Replace(key, "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n", 1)
	tests := []struct {
		name      string
		cert, key string
		field     string
		says      string
	}{
		{"Valid", cert, key, "", ""},
		{"ValidWithChain", cert + ca.PEM, key, "", ""},
		{"ValidRSA", rsaCert, rsaKey, "", ""},
		{"CertificateMissing", "", key, "client_certificate.certificate", "required"},
		{"KeyMissing", cert, "", "client_certificate.private_key", "required"},
		{"CertificateNotPEM", "hello", key, "client_certificate.certificate", "PEM"},
		{"CertificateTrailingJunk", cert + "junk", key, "client_certificate.certificate", "PEM"},
		{"KeyInCertificate", cert + key, key, "client_certificate.certificate", "PRIVATE KEY"},
		{"CertificateGarbageBlock", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", key, "client_certificate.certificate", "parsed"},
		{"KeyNotPEM", cert, "secret", "client_certificate.private_key", "PEM"},
		{"KeyIsCertificate", cert, cert, "client_certificate.private_key", "CERTIFICATE"},
		{"KeyEncrypted", cert, encryptedKey, "client_certificate.private_key", "encrypted"},
		{"KeyOfAnotherCertificate", cert, otherKey, "client_certificate.private_key", "does not match"},
		{"Expired", expired, expiredKey, "client_certificate.certificate", "expired"},
		{"NotYetValid", future, futureKey, "client_certificate.certificate", "not valid before"},
		{"ServerOnly", server, serverKey, "client_certificate.certificate", "clientAuth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, msg := firstProblem(t, webhooksettings.Update{Certificate: &webhooksettings.CertificateInput{CertificatePEM: tt.cert, PrivateKeyPEM: tt.key}})
			if field != tt.field || !strings.Contains(msg, tt.says) {
				t.Fatalf("problem = %q %q, want %q saying %q", field, msg, tt.field, tt.says)
			}
			for _, text := range []string{tt.cert, tt.key} {
				if lines := strings.Split(text, "\n"); len(lines) > 2 && len(lines[1]) >= 20 && strings.Contains(msg, lines[1][:20]) {
					t.Errorf("message %q quotes the PEM", msg)
				}
			}
		})
	}
}

func TestParseCertificate_Describes(t *testing.T) {
	ca := testcerts.NewCA(t, "Describe CA")
	cert, key := ca.Issue(t, testcerts.Leaf{CommonName: "billing client"})
	info, e := webhooksettings.ParseCertificate(cert, key, time.Now())
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(info.Info.Subject, "CN=billing client") || !strings.Contains(info.Info.Issuer, "CN=Describe CA") {
		t.Errorf("subject %q, issuer %q", info.Info.Subject, info.Info.Issuer)
	}
	if len(info.Info.SHA256) != 64 || info.Info.NotAfter.Before(time.Now()) {
		t.Errorf("info = %+v", info.Info)
	}
	if strings.Contains(info.ChainPEM, "PRIVATE") {
		t.Error("chain holds the key")
	}
}
