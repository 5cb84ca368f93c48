package subscriptions_test

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/subscriptions"
)

type fixture struct {
	store *subscriptions.Store
	box   *secrets.Box
	key   secrets.Key // the box's only key, id "k1"
	db    *testenv.Database
	a, b  webhooks.Account
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := testenv.NewDatabase(t)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	key := secrets.Key{ID: "k1", Key: raw}
	box, err := secrets.NewBox([]secrets.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	ids := identity.NewStore(db.Pool)
	a, err := ids.CreateAccount(t.Context(), "a", webhooks.PlanTeam)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ids.CreateAccount(t.Context(), "b", webhooks.PlanEnterprise)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: subscriptions.NewStore(db.Pool, box), box: box, key: key, db: db, a: a, b: b}
}

func (f *fixture) mustCreate(t *testing.T, acct webhooks.Account, name string) (webhooks.Subscription, string) {
	t.Helper()
	sub, secret, err := f.store.Create(t.Context(), webhooks.Subscription{
		AccountID: acct.ID, Name: name, ClientURL: "https://hooks.example.com/" + name,
		EventTypes: []string{webhooks.EventRunErrored, webhooks.EventRunStarted}, JobIDs: []int64{3, 1, 2}, Active: true,
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return sub, secret
}

func TestStore_CreateAndGet(t *testing.T) {
	f := newFixture(t)
	created, secret := f.mustCreate(t, f.a, "one")
	if created.AccountIdentifier != f.a.Identifier || created.HTTPStatusCode != 0 || created.DispatchedAt != nil ||
		!created.CreatedAt.Equal(created.UpdatedAt) || len(secret) < 43 {
		t.Fatalf("created = %+v, secret length %d", created, len(secret))
	}
	got, err := f.store.Get(t.Context(), f.a.ID, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.JobIDs, []int64{3, 1, 2}) || !slices.Equal(got.EventTypes, []string{webhooks.EventRunErrored, webhooks.EventRunStarted}) ||
		got.Name != "one" || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("got %+v, want %+v", got, created)
	}
	var keyID string
	var sealed []byte
	if err := f.db.Pool.QueryRow(context.Background(),
		"SELECT secret_key_id, secret_ciphertext FROM webhook_subscriptions WHERE id = $1", created.ID).Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	if opened, err := f.box.Open(keyID, sealed, created.ID); err != nil || opened != secret {
		t.Fatalf("stored secret opens to %q, %v", opened, err)
	}
}

func TestStore_OtherAccountCannotSeeOrChange(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.mustCreate(t, f.a, "mine")
	ctx := t.Context()
	if _, err := f.store.Get(ctx, f.b.ID, sub.ID); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("Get from other account: %v, want ErrNotFound", err)
	}
	name := "hijacked"
	if _, err := f.store.Update(ctx, f.b.ID, sub.ID, webhooks.SubscriptionUpdate{Name: &name}); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("Update from other account: %v, want ErrNotFound", err)
	}
	if err := f.store.Delete(ctx, f.b.ID, sub.ID); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("Delete from other account: %v, want ErrNotFound", err)
	}
	page, err := f.store.List(ctx, f.b.ID, 100, 0)
	if err != nil || page.Total != 0 || len(page.Subscriptions) != 0 {
		t.Errorf("other account's list = %+v, %v; want empty", page, err)
	}
	if got, err := f.store.Get(ctx, f.a.ID, sub.ID); err != nil || got.Name != "mine" || !got.UpdatedAt.Equal(sub.UpdatedAt) {
		t.Errorf("subscription changed: %+v, %v", got, err)
	}
}

func TestStore_DeleteIsFinal(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.mustCreate(t, f.a, "gone")
	keep, _ := f.mustCreate(t, f.a, "kept")
	ctx := t.Context()
	if err := f.store.Delete(ctx, f.a.ID, sub.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Delete(ctx, f.a.ID, sub.ID); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	if _, err := f.store.Get(ctx, f.a.ID, sub.ID); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("get deleted: %v, want ErrNotFound", err)
	}
	active := true
	if _, err := f.store.Update(ctx, f.a.ID, sub.ID, webhooks.SubscriptionUpdate{Active: &active}); !errors.Is(err, subscriptions.ErrNotFound) {
		t.Errorf("update deleted: %v, want ErrNotFound", err)
	}
	page, err := f.store.List(ctx, f.a.ID, 10, 0)
	if err != nil || page.Total != 1 || len(page.Subscriptions) != 1 || page.Subscriptions[0].ID != keep.ID {
		t.Errorf("list after delete = %+v, %v", page, err)
	}
}

func TestStore_ListWindow(t *testing.T) {
	f := newFixture(t)
	var ids []string
	for _, name := range []string{"s1", "s2", "s3", "s4", "s5"} {
		sub, _ := f.mustCreate(t, f.a, name)
		ids = append(ids, sub.ID)
	}
	tests := []struct {
		limit  int32
		offset int64
		want   []string
	}{
		{10, 0, ids},
		{2, 0, ids[:2]},
		{2, 2, ids[2:4]},
		{2, 4, ids[4:]},
		{2, 5, nil},
		{100, 1 << 40, nil},
	}
	for _, tt := range tests {
		page, err := f.store.List(t.Context(), f.a.ID, tt.limit, tt.offset)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range page.Subscriptions {
			got = append(got, s.ID)
		}
		if page.Total != 5 || !slices.Equal(got, tt.want) || page.Subscriptions == nil {
			t.Errorf("List(limit %d, offset %d) = %v total %d, want %v total 5", tt.limit, tt.offset, got, page.Total, tt.want)
		}
	}
}

func TestStore_UpdateAppliesAndAdvances(t *testing.T) {
	f := newFixture(t)
	sub, _ := f.mustCreate(t, f.a, "u")
	inactive := false
	if _, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooks.SubscriptionUpdate{Active: &inactive}); err != nil {
		t.Fatal(err)
	}
	url := "https://hooks.example.com/elsewhere"
	got, err := f.store.Update(t.Context(), f.a.ID, sub.ID, webhooks.SubscriptionUpdate{ClientURL: &url, JobIDs: &[]int64{}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Active || got.ClientURL != url || len(got.JobIDs) != 0 || !got.UpdatedAt.After(sub.UpdatedAt) || got.Name != "u" {
		t.Fatalf("after update: %+v", got)
	}
	stored, _ := f.store.Get(t.Context(), f.a.ID, sub.ID)
	if !stored.UpdatedAt.Equal(got.UpdatedAt) || !stored.Active || stored.JobIDs == nil {
		t.Fatalf("stored %+v differs from returned %+v", stored, got)
	}
}
