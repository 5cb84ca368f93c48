package webhooks_test

import (
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
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

func TestIsDeliveryID(t *testing.T) {
	for id, want := range map[string]bool{
		"wdl_" + strings.Repeat("a", 32): true,
		"wdl_":                           true, // the right shape; the lookup decides
		"wsu_abc":                        false,
		"wdl_" + strings.Repeat("a", 61): false,
		"wdl_\x00abc":                    false,
		"wdl_\xff\xfe":                   false,
		"\xff\xfe":                       false,
	} {
		if got := webhooks.IsDeliveryID(id); got != want {
			t.Errorf("IsDeliveryID(%q) = %v, want %v", id, got, want)
		}
	}
}
