package webhooks_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
)

// verifyV1a is a receiver written from the Standard Webhooks text alone,
// with Go's crypto/ed25519: some "v1a,<base64>" of header is pub's
// signature of "{id}.{timestamp}.{body}".
func verifyV1a(pub ed25519.PublicKey, id string, timestamp int64, body []byte, header string) bool {
	msg := []byte(id + "." + strconv.FormatInt(timestamp, 10) + "." + string(body))
	for _, s := range strings.Split(header, " ") {
		if b64, ok := strings.CutPrefix(s, "v1a,"); ok {
			if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && ed25519.Verify(pub, msg, sig) {
				return true
			}
		}
	}
	return false
}

// TestSignStandardAsymmetric_VerifiedByCryptoEd25519: our v1a signature
// verifies with the public key by an independent receiver; a changed body,
// id or timestamp, or another key, does not.
func TestSignStandardAsymmetric_VerifiedByCryptoEd25519(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	body := []byte(`{"accountId":1,"eventType":"job.run.completed"}`)
	now := time.Unix(1_900_000_000, 999_000_000)
	sig := webhooks.SignStandardAsymmetric(priv, "wdl_1", now, body)
	if !strings.HasPrefix(sig, "v1a,") || strings.Contains(sig, " ") {
		t.Fatalf("signature %q, want one v1a,<base64>", sig)
	}
	if !verifyV1a(pub, "wdl_1", now.Unix(), body, sig) {
		t.Fatal("an independent receiver refuses our signature")
	}
	for name, ok := range map[string]bool{
		"OtherBody":      verifyV1a(pub, "wdl_1", now.Unix(), append(body, ' '), sig),
		"OtherID":        verifyV1a(pub, "wdl_2", now.Unix(), body, sig),
		"OtherTimestamp": verifyV1a(pub, "wdl_1", now.Unix()+1, body, sig),
		"OtherKey":       verifyV1a(other, "wdl_1", now.Unix(), body, sig),
	} {
		if ok {
			t.Errorf("%s verified", name)
		}
	}
}

// TestVerifyStandardAsymmetric: a v1a signature by the key among other
// signatures verifies; v1 entries, other keys, changed inputs and
// malformed entries do not.
func TestVerifyStandardAsymmetric(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	body := []byte(`{"eventType":"job.run.started"}`)
	now := time.Unix(1_900_000_000, 0)
	good := webhooks.SignStandardAsymmetric(priv, "wdl_1", now, body)
	other := webhooks.SignStandardAsymmetric(otherPriv, "wdl_1", now, body)
	hmacSig := webhooks.SignStandard("secret", "wdl_1", now, body)
	tests := []struct {
		name   string
		pub    ed25519.PublicKey
		id     string
		body   []byte
		header string
		want   bool
	}{
		{"Alone", pub, "wdl_1", body, good, true},
		{"BesideHMACAndAnotherKey", pub, "wdl_1", body, hmacSig + " " + other + " " + good, true},
		{"OtherKeyOnly", pub, "wdl_1", body, hmacSig + " " + other, false},
		{"OtherID", pub, "wdl_2", body, good, false},
		{"OtherBody", pub, "wdl_1", []byte(`{}`), good, false},
		{"SignatureAsV1", pub, "wdl_1", body, "v1," + strings.TrimPrefix(good, "v1a,"), false},
		{"Malformed", pub, "wdl_1", body, "v1a,!!! v1a", false},
		{"ShortKey", pub[:16], "wdl_1", body, good, false},
		{"Empty", pub, "wdl_1", body, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhooks.VerifyStandardAsymmetric(tt.pub, tt.id, now, tt.body, tt.header); got != tt.want {
				t.Fatalf("VerifyStandardAsymmetric = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStandardWebhooksPublicKey: whpk_ and the standard base64 of the key's
// 32 bytes.
func TestStandardWebhooksPublicKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	got := webhooks.StandardWebhooksPublicKey(pub)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(got, "whpk_"))
	if !strings.HasPrefix(got, "whpk_") || err != nil || !pub.Equal(ed25519.PublicKey(raw)) {
		t.Fatalf("StandardWebhooksPublicKey = %q (%v)", got, err)
	}
}
