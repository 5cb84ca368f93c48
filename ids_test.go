package webhooks_test

import (
	"crypto/rand"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

func TestIsSubscriptionID(t *testing.T) {
	for id, want := range map[string]bool{
		webhooks.NewID(webhooks.SubscriptionIDPrefix): true,
		"wsu_":                            true, // the right shape; the lookup decides
		"act_abc":                         false,
		"../wsu_x":                        false,
		"wsu_" + string(make([]byte, 61)): false,
		"wsu_\x00abc":                     false, // NUL: the database cannot hold it
		"wsu_\xff\xfe":                    false, // invalid UTF-8
		"wsu_a\nb":                        false, // control character
	} {
		if got := webhooks.IsSubscriptionID(id); got != want {
			t.Errorf("IsSubscriptionID(%q) = %v, want %v", id, got, want)
		}
	}
}

// derivedDeliveryID is the id ingesting eventID makes for subscriptionID
// at now: the ingestion statement builds it in SQL (webhook_delivery_id)
// from the second and the key, so the test builds it the same way.
func derivedDeliveryID(eventID, subscriptionID string) string {
	return webhooks.DeliveryIDSecond(time.Now()) + deliveries.DeliveryKey(eventID, subscriptionID)
}

func TestIsDeliveryID(t *testing.T) {
	derived := derivedDeliveryID(webhooks.NewID(webhooks.EventIDPrefix), webhooks.NewID(webhooks.SubscriptionIDPrefix))
	for _, tc := range []struct {
		name string
		id   string
		want bool
	}{
		{"Random", webhooks.NewDeliveryID(), true},
		{"DerivedFromEventAndWebhook", derived, true},
		{"AllDigits", "wdl_" + strings.Repeat("0", 26), true},
		{"Base32", "wdl_" + strings.ToLower(rand.Text()), false}, // the old random format
		{"Uppercase", "wdl_" + strings.Repeat("A", 26), false},
		{"NotHex", "wdl_" + strings.Repeat("g", 26), false},
		{"TooShort", "wdl_" + strings.Repeat("a", 25), false},
		{"TooLong", "wdl_" + strings.Repeat("a", 27), false},
		{"PrefixOnly", "wdl_", false},
		{"OtherPrefix", "wsu_" + strings.Repeat("a", 26), false},
		{"NoPrefix", strings.Repeat("a", 30), false},
		{"NUL", "wdl_" + strings.Repeat("a", 25) + "\x00", false},
		{"InvalidUTF8", "wdl_" + strings.Repeat("a", 24) + "\xff\xfe", false},
		{"Traversal", "../wdl_" + strings.Repeat("a", 26), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := webhooks.IsDeliveryID(tc.id); got != tc.want {
				t.Errorf("IsDeliveryID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

// TestNewDeliveryID_RandomLowercaseHex: random delivery ids have the format
// of the derived ones (the prefix and 26 lowercase hex characters), start
// with the second they were made (records are partitioned by it) and do
// not repeat.
func TestNewDeliveryID_RandomLowercaseHex(t *testing.T) {
	format := regexp.MustCompile(`^wdl_[0-9a-f]{26}$`)
	seen := make(map[string]bool)
	for range 1000 {
		before := time.Now()
		id := webhooks.NewDeliveryID()
		if !format.MatchString(id) {
			t.Fatalf("NewDeliveryID() = %q, want wdl_ and 26 lowercase hex characters", id)
		}
		// The second may tick between before and the id's own clock read.
		if second := id[:len(webhooks.DeliveryIDSecond(before))]; second != webhooks.DeliveryIDSecond(before) &&
			second != webhooks.DeliveryIDSecond(before.Add(time.Second)) {
			t.Fatalf("NewDeliveryID() = %q, want it to start with the second it was made, %s", id, webhooks.DeliveryIDSecond(before))
		}
		if seen[id] {
			t.Fatalf("NewDeliveryID() repeated %q", id)
		}
		seen[id] = true
	}
	if derived := derivedDeliveryID("wev_a", "wsu_b"); !format.MatchString(derived) {
		t.Fatalf("derived delivery id %q: the two formats differ", derived)
	}
}

func TestRelayURL_UnderTheBase(t *testing.T) {
	for _, base := range []string{"http://api.internal:8080", "http://api.internal:8080/"} {
		if got := webhooks.RelayURL(base, "whr_x"); got != "http://api.internal:8080/relay/v1/whr_x" {
			t.Errorf("RelayURL(%q) = %q", base, got)
		}
	}
	if !webhooks.IsListenerID("wls_abc") || webhooks.IsListenerID("wsu_abc") || !webhooks.IsListenerAttemptID("wla_abc") {
		t.Error("listener id shapes misread")
	}
}
