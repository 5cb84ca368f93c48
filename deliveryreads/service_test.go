package deliveryreads_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/deliveryreads"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// fixture is two accounts, each with an admin's access, over a fresh
// database.
type fixture struct {
	store  *deliveries.Store
	reads  *deliveryreads.Service
	subs   *subscriptions.Service
	hooks  *subscriptions.Store
	a, b   webhooks.Account
	aa, ba subscriptions.Access
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: deliveries.NewStore(db.Pool), hooks: subscriptions.NewStore(db.Pool, box)}
	f.reads = deliveryreads.NewService(f.store)
	if f.subs, err = subscriptions.NewService(f.hooks, &netguard.Policy{}); err != nil {
		t.Fatal(err)
	}
	ids := identity.NewStore(db.Pool)
	for _, acct := range []*webhooks.Account{&f.a, &f.b} {
		if *acct, err = ids.CreateAccount(t.Context(), webhooks.NewID("acct"), webhooks.PlanTeam); err != nil {
			t.Fatal(err)
		}
	}
	f.aa, f.ba = f.access(t, f.a), f.access(t, f.b)
	return f
}

// access is an account admin's access to acct, from Authorize.
func (f *fixture) access(t *testing.T, acct webhooks.Account) subscriptions.Access {
	t.Helper()
	admin := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: acct, License: "developer", PermissionSets: []string{"account_admin"}},
	}}
	a, err := f.subs.Authorize(admin, strconv.FormatInt(acct.ID, 10), true)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) mustCreateWebhook(t *testing.T, acct webhooks.Account) webhooks.Subscription {
	t.Helper()
	sub, _, err := f.hooks.Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: "hook", ClientURL: "https://hooks.example.com/", EventTypes: webhooks.EventTypes, Active: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func requireNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if webhooks.ErrorCode(err) != webhooks.ENOTFOUND {
		t.Errorf("%s: error = %v, want ENOTFOUND", what, err)
	}
}

// TestWebhook_OnlyTheAccountsLiveWebhook: a webhook is found only with its
// own account's access; another account's, a deleted, an unknown and a
// malformed id are not found alike, so none of the per-webhook reads (the
// breaker and the in-flight limit, kept by webhook id alone, included) can
// run for another account's webhook.
func TestWebhook_OnlyTheAccountsLiveWebhook(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	mine := f.mustCreateWebhook(t, f.a)
	deleted := f.mustCreateWebhook(t, f.a)
	if err := f.subs.Delete(ctx, f.aa, deleted.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.store.SaveInFlightLimits(ctx, []deliveries.InFlightLimit{{WebhookID: mine.ID, Limit: 40, InFlight: 3}}); err != nil {
		t.Fatal(err)
	}

	w, err := f.reads.Webhook(ctx, f.aa, mine.ID)
	if err != nil {
		t.Fatalf("own webhook: %v", err)
	}
	if w.ID() != mine.ID || w.AccountID() != f.a.ID {
		t.Errorf("Webhook = %s of account %d, want %s of %d", w.ID(), w.AccountID(), mine.ID, f.a.ID)
	}
	if b, err := f.reads.Breaker(ctx, w); err != nil || b.SubscriptionID != mine.ID || b.AccountID != f.a.ID {
		t.Errorf("Breaker = %+v, %v; want the webhook's", b, err)
	}
	if l, ok, err := f.reads.InFlightLimit(ctx, w); err != nil || !ok || l.Limit != 40 {
		t.Errorf("InFlightLimit = %+v, %v, %v; want the reported 40", l, ok, err)
	}

	for name, tt := range map[string]struct {
		access subscriptions.Access
		id     string
	}{
		"AnotherAccounts": {f.ba, mine.ID},
		"Deleted":         {f.aa, deleted.ID},
		"Unknown":         {f.aa, webhooks.NewID(webhooks.SubscriptionIDPrefix)},
		"Malformed":       {f.aa, "wsu_\x00"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := f.reads.Webhook(ctx, tt.access, tt.id)
			requireNotFound(t, "Webhook", err)
		})
	}
}

// TestBreaker_DeletedMeanwhileIsNotFound: a webhook deleted after it was
// found has no breaker to show.
func TestBreaker_DeletedMeanwhileIsNotFound(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	sub := f.mustCreateWebhook(t, f.a)
	w, err := f.reads.Webhook(ctx, f.aa, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.subs.Delete(ctx, f.aa, sub.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.reads.Breaker(ctx, w)
	if !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("Breaker of a deleted webhook: %v, want subscriptions.ErrNotFound", err)
	}
	_, err = f.reads.Health(ctx, w)
	requireNotFound(t, "Health", err)
}

// TestReads_RefuseWhatWasNotChecked: a Webhook that did not come from
// Service.Webhook and an Access that did not come from Authorize are
// refused before anything is read (the service has no store to read).
func TestReads_RefuseWhatWasNotChecked(t *testing.T) {
	reads := deliveryreads.NewService(nil)
	ctx := context.Background()
	var w deliveryreads.Webhook
	var a subscriptions.Access
	for name, read := range map[string]func() error{
		"Webhook": func() error {
			_, err := reads.Webhook(ctx, a, webhooks.NewID(webhooks.SubscriptionIDPrefix))
			return err
		},
		"SearchDeliveries": func() error {
			_, _, err := reads.SearchDeliveries(ctx, a, deliveries.SearchFilter{Limit: 1})
			return err
		},
		"WebhookFlags":    func() error { _, _, err := reads.WebhookFlags(ctx, a); return err },
		"ListDeliveries":  func() error { _, _, err := reads.ListDeliveries(ctx, w, deliveries.ListFilter{Limit: 1}); return err },
		"Delivery":        func() error { _, err := reads.Delivery(ctx, w, webhooks.NewDeliveryID()); return err },
		"Health":          func() error { _, err := reads.Health(ctx, w); return err },
		"Hourly":          func() error { _, err := reads.Hourly(ctx, w); return err },
		"Breaker":         func() error { _, err := reads.Breaker(ctx, w); return err },
		"InFlightLimit":   func() error { _, _, err := reads.InFlightLimit(ctx, w); return err },
		"Replay":          func() error { _, err := reads.Replay(ctx, w, "wrp_x"); return err },
		"CountReplayable": func() error { _, err := reads.CountReplayable(ctx, w, time.Now(), nil); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := read()
			if err == nil || webhooks.ErrorCode(err) != webhooks.EINTERNAL {
				t.Errorf("error = %v, want an internal error", err)
			}
		})
	}
}
