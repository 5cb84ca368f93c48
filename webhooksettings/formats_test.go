package webhooksettings_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

const routingKey = "R0UTINGKEY0123456789abcdefABCDEF"

func TestUpdateProblems_Formats(t *testing.T) {
	long := strings.Repeat("x", webhooksettings.MaxRoutingKeyBytes+1)
	for _, tt := range []struct {
		name  string
		u     webhooksettings.Update
		field string // "" means valid
		want  string // in the message
	}{
		{"Standard", webhooksettings.Update{Format: ptr("standard")}, "", ""},
		{"Slack", webhooksettings.Update{Format: ptr("slack")}, "", ""},
		{"Teams", webhooksettings.Update{Format: ptr("teams")}, "", ""},
		{"PagerDutyWithKey", webhooksettings.Update{Format: ptr("pagerduty"), PagerDutyRoutingKey: ptr(routingKey)}, "", ""},
		{"UnknownFormat", webhooksettings.Update{Format: ptr("discord")}, "format", `"discord"`},
		{"FormatWrongCase", webhooksettings.Update{Format: ptr("Slack")}, "format", `"slack"`},
		{"EmptyFormat", webhooksettings.Update{Format: ptr("")}, "format", `"standard"`},
		{"Every", webhooksettings.Update{NotifyOn: ptr("every")}, "", ""},
		{"StateChange", webhooksettings.Update{NotifyOn: ptr("state_change")}, "", ""},
		{"UnknownNotifyOn", webhooksettings.Update{NotifyOn: ptr("changes")}, "notify_on", `"state_change"`},
		{"NoFilter", webhooksettings.Update{Filter: &webhooksettings.FilterInput{}}, "", ""},
		{"Filter", webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(`data.environmentName == "Prod"`)}}, "", ""},
		{"FilterDoesNotCompile", webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(`data.environmentName ==`)}}, "filter", "Syntax error"},
		{"FilterNotBool", webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr(`data.jobId`)}}, "filter", "bool"},
		{"FilterEmpty", webhooksettings.Update{Filter: &webhooksettings.FilterInput{Expr: ptr("")}}, "filter", "null"},
		{"RoutingKeyEmpty", webhooksettings.Update{PagerDutyRoutingKey: ptr("")}, "pagerduty_routing_key", "printable"},
		{"RoutingKeySpaces", webhooksettings.Update{PagerDutyRoutingKey: ptr("a b")}, "pagerduty_routing_key", "printable"},
		{"RoutingKeyTooLong", webhooksettings.Update{PagerDutyRoutingKey: ptr(long)}, "pagerduty_routing_key", "128"},
		{"RoutingKeyWithOtherFormat", webhooksettings.Update{Format: ptr("slack"), PagerDutyRoutingKey: ptr(routingKey)}, "pagerduty_routing_key", `"slack"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			field, msg := firstProblem(t, tt.u)
			if field != tt.field || !strings.Contains(msg, tt.want) {
				t.Fatalf("problem %q: %q, want %q containing %q", field, msg, tt.field, tt.want)
			}
		})
	}
}

func TestStateChangeOnly(t *testing.T) {
	for _, tt := range []struct {
		format, notifyOn string
		want             bool
	}{
		{"standard", "every", false}, {"slack", "every", false}, {"teams", "state_change", true},
		{"standard", "state_change", true}, {"pagerduty", "every", true}, {"pagerduty", "state_change", true},
	} {
		if got := webhooksettings.StateChangeOnly(tt.format, tt.notifyOn); got != tt.want {
			t.Errorf("StateChangeOnly(%q, %q) = %v, want %v", tt.format, tt.notifyOn, got, tt.want)
		}
	}
}

func TestStore_FormatsDefaultsAndRoundTrip(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	got, err := f.store.Get(t.Context(), f.a.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "standard" || got.NotifyOn != "every" || got.Filter != nil || got.HasPagerDutyRoutingKey {
		t.Fatalf("defaults = %q %q %v %v, want standard every nil false", got.Format, got.NotifyOn, got.Filter, got.HasPagerDutyRoutingKey)
	}
	expr := `data.environmentName == "Prod"`
	set := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Format: ptr("pagerduty"), NotifyOn: ptr("state_change"),
		Filter: &webhooksettings.FilterInput{Expr: &expr}, PagerDutyRoutingKey: ptr(routingKey)})
	got, err = f.store.Get(t.Context(), f.a.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []webhooksettings.Settings{set, got} {
		if s.Format != "pagerduty" || s.NotifyOn != "state_change" || s.Filter == nil || *s.Filter != expr || !s.HasPagerDutyRoutingKey {
			t.Fatalf("settings = %+v, want pagerduty, state_change, the filter and a routing key", s)
		}
	}
	sending := f.mustSending(t, sub.ID)
	if sending.Format != "pagerduty" || sending.PagerDutyRoutingKey != routingKey || sending.Err != nil {
		t.Fatalf("sending = %q %q %v, want pagerduty and the key opened", sending.Format, sending.PagerDutyRoutingKey, sending.Err)
	}
	var stored []byte
	if err := f.db.Pool.QueryRow(t.Context(), `SELECT pagerduty_routing_key_ciphertext FROM webhook_delivery_settings WHERE subscription_id = $1`, sub.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), routingKey) {
		t.Fatal("the routing key is stored in clear")
	}
	// An update that leaves the routing key out keeps it; a filter of null removes it.
	f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Filter: &webhooksettings.FilterInput{}, NotifyOn: ptr("every")})
	if s := f.mustSending(t, sub.ID); s.PagerDutyRoutingKey != routingKey {
		t.Fatalf("routing key after an update without it = %q, want kept", s.PagerDutyRoutingKey)
	}
	if got, _ := f.store.Get(t.Context(), f.a.ID, sub.ID); got.Filter != nil || got.NotifyOn != "every" {
		t.Fatalf("after null filter: %+v", got)
	}
	// Another format drops the routing key; pagerduty again needs one.
	if s := f.mustUpdate(t, f.a, sub.ID, webhooksettings.Update{Format: ptr("slack")}); s.HasPagerDutyRoutingKey {
		t.Fatal("the routing key is kept after the format changed to slack")
	}
	if s := f.mustSending(t, sub.ID); s.Format != "slack" || s.PagerDutyRoutingKey != "" {
		t.Fatalf("sending after slack = %q %q", s.Format, s.PagerDutyRoutingKey)
	}
	_, err = f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{Format: ptr("pagerduty")}, time.Now())
	wantProblem(t, err, "pagerduty_routing_key")
	_, err = f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{PagerDutyRoutingKey: ptr(routingKey)}, time.Now())
	wantProblem(t, err, "pagerduty_routing_key")
	if got, _ := f.store.Get(t.Context(), f.a.ID, sub.ID); got.Format != "slack" || got.HasPagerDutyRoutingKey {
		t.Fatalf("a refused update changed the settings: %+v", got)
	}
}

func TestStore_PagerDutyNeedsARoutingKeyOnAFreshWebhook(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	_, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooksettings.Update{Format: ptr("pagerduty")}, time.Now())
	wantProblem(t, err, "pagerduty_routing_key")
	if got, _ := f.store.Get(t.Context(), f.a.ID, sub.ID); got.Format != "standard" {
		t.Fatalf("format after the refused update = %q", got.Format)
	}
}

// secrets reencrypt reseals a routing key too, and it still opens with
// the new key alone; a copy on another webhook does not open (its AAD).
func TestStore_ResealsTheRoutingKey(t *testing.T) {
	f := newFixture(t)
	oldBox, oldKey := newBox(t, "old")
	_, newKey := newBox(t, "new")
	sub := f.mustCreateWebhook(t, f.a)
	other := f.mustCreateWebhook(t, f.a)
	for _, id := range []string{sub.ID, other.ID} {
		if _, err := webhooksettings.NewStore(f.db.Pool, oldBox).Update(t.Context(), f.a.ID, id, webhooksettings.Update{
			Format: ptr("pagerduty"), PagerDutyRoutingKey: ptr(routingKey + id)}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	both, err := secrets.NewBox([]secrets.Key{newKey, oldKey})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := webhooksettings.NewStore(f.db.Pool, both).ResealSecrets(t.Context()); err != nil || n != 2 {
		t.Fatalf("ResealSecrets = %d, %v; want 2", n, err)
	}
	newOnly, _ := secrets.NewBox([]secrets.Key{newKey})
	got, err := webhooksettings.NewStore(f.db.Pool, newOnly).ForSending(t.Context(), []string{sub.ID})
	if err != nil || got[sub.ID].PagerDutyRoutingKey != routingKey+sub.ID || got[sub.ID].Err != nil {
		t.Fatalf("ForSending with the new key alone = %+v, %v", got[sub.ID], err)
	}
	if _, err := f.db.Pool.Exec(t.Context(), `UPDATE webhook_delivery_settings SET pagerduty_routing_key_ciphertext =
		(SELECT pagerduty_routing_key_ciphertext FROM webhook_delivery_settings WHERE subscription_id = $1)
		WHERE subscription_id = $2`, sub.ID, other.ID); err != nil {
		t.Fatal(err)
	}
	got, err = webhooksettings.NewStore(f.db.Pool, newOnly).ForSending(t.Context(), []string{other.ID})
	if err != nil || got[other.ID].Err == nil || got[other.ID].PagerDutyRoutingKey != "" {
		t.Fatalf("a routing key copied from another webhook = %+v, %v; want an error and no key", got[other.ID], err)
	}
}

func (f *fixture) mustSending(t *testing.T, id string) webhooksettings.Sending {
	t.Helper()
	m, err := f.store.ForSending(t.Context(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	return m[id]
}

func wantProblem(t *testing.T, err error, field string) {
	t.Helper()
	var p webhooks.Problems
	if !errors.As(err, &p) || len(p) == 0 || p[0].Field != field {
		t.Fatalf("error = %v, want a problem naming %s", err, field)
	}
}
