package webhooksettings_test

import (
	"strconv"
	"strings"
	"testing"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/subscriptions"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

func TestUpdateProblems_OnOutage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mode  *string
		valid bool
	}{
		{"ServiceDefault", nil, true},
		{"Retry", ptr("retry"), true},
		{"Hold", ptr("hold"), true},
		{"Empty", ptr(""), false},
		{"WrongCase", ptr("Hold"), false},
		{"Other", ptr("wait"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			field, msg := firstProblem(t, webhooksettings.Update{OnOutage: &webhooksettings.OnOutage{Mode: tt.mode}})
			if tt.valid && field != "" {
				t.Fatalf("problem %s: %s, want none", field, msg)
			}
			if !tt.valid && (field != "on_outage" || !strings.Contains(msg, `"retry"`) || !strings.Contains(msg, `"hold"`)) {
				t.Fatalf("problem %q: %q, want on_outage naming retry and hold", field, msg)
			}
		})
	}
}

func TestNewService_RefusesAnUnknownDefaultOnOutage(t *testing.T) {
	f := newFixture(t)
	if _, err := webhooksettings.NewService(f.store, webhooksettings.DefaultOnOutage("wait")); err == nil {
		t.Fatal("NewService accepted the default on_outage \"wait\"")
	}
}

// TestService_OnOutageFollowsTheDefaultUntilChosen: a webhook that chose
// nothing shows the service's default (marked as such); a choice is kept
// by updates that do not mention it, and null goes back to the default.
func TestService_OnOutageFollowsTheDefaultUntilChosen(t *testing.T) {
	f := newFixture(t)
	sub := f.mustCreateWebhook(t, f.a)
	subs, err := subscriptions.NewService(f.subs, &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	p := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: f.a, License: "developer", PermissionSets: []string{"member"}}}}
	access, err := subs.Authorize(p, strconv.FormatInt(f.a.ID, 10), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{deliveries.OnOutageRetry, deliveries.OnOutageHold} {
		t.Run("Default"+def, func(t *testing.T) {
			svc, err := webhooksettings.NewService(f.store, webhooksettings.DefaultOnOutage(def))
			if err != nil {
				t.Fatal(err)
			}
			other := map[string]string{deliveries.OnOutageRetry: deliveries.OnOutageHold, deliveries.OnOutageHold: deliveries.OnOutageRetry}[def]
			steps := []struct {
				name        string
				update      webhooksettings.Update
				want        string
				wantDefault bool
			}{
				{"Chosen", webhooksettings.Update{OnOutage: &webhooksettings.OnOutage{Mode: &other}}, other, false},
				{"KeptByOtherChanges", webhooksettings.Update{Rate: &webhooksettings.Rate{MaxRequestsPerSecond: ptr(3.0)}}, other, false},
				{"NullIsTheDefault", webhooksettings.Update{OnOutage: &webhooksettings.OnOutage{}}, def, true},
			}
			if got, err := svc.Get(t.Context(), access, sub.ID); err != nil || got.OnOutage != def || !got.OnOutageIsDefault {
				t.Fatalf("before any choice: %q default %v (err %v), want %q, the default", got.OnOutage, got.OnOutageIsDefault, err, def)
			}
			for _, s := range steps {
				put, err := svc.Update(t.Context(), access, sub.ID, s.update)
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				got, err := svc.Get(t.Context(), access, sub.ID)
				if err != nil || put.OnOutage != s.want || got.OnOutage != s.want || got.OnOutageIsDefault != s.wantDefault {
					t.Errorf("%s: update answered %q, get %q default %v (err %v); want %q default %v",
						s.name, put.OnOutage, got.OnOutage, got.OnOutageIsDefault, err, s.want, s.wantDefault)
				}
			}
		})
	}
}
