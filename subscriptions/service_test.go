package subscriptions_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/netguard"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Client URLs with IP literals, so no test needs DNS.
const (
	publicURL  = "https://93.184.215.14/hooks"
	privateURL = "http://10.0.0.1/hooks"
)

// mustNewService returns the use cases over store with the default,
// strict destination policy.
func mustNewService(t *testing.T, store *subscriptions.Store) *subscriptions.Service {
	t.Helper()
	svc, err := subscriptions.NewService(store, &netguard.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// user is a principal that is a member of acct with license.
func user(acct webhooks.Account, license string) *webhooks.Principal {
	return &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: 1, Memberships: []webhooks.Membership{
		{Account: acct, License: license, PermissionSets: []string{"member"}},
	}}
}

// mustAuthorize returns p's access to acct.
func mustAuthorize(t *testing.T, svc *subscriptions.Service, p *webhooks.Principal, acct webhooks.Account, write bool) subscriptions.Access {
	t.Helper()
	a, err := svc.Authorize(p, strconv.FormatInt(acct.ID, 10), write)
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	return a
}

func validInput() webhooks.Subscription {
	return webhooks.Subscription{
		Name: "alerts", ClientURL: publicURL, EventTypes: []string{webhooks.EventRunErrored}, JobIDs: []int64{}, Active: true,
	}
}

func TestNewService_RequiresStoreAndPolicy(t *testing.T) {
	if _, err := subscriptions.NewService(nil, &netguard.Policy{}); err == nil {
		t.Error("NewService without a store: no error")
	}
	if _, err := subscriptions.NewService(subscriptions.NewStore(nil, nil), nil); err == nil {
		t.Error("NewService without a policy: no error")
	}
}

func TestAuthorize(t *testing.T) {
	svc := mustNewService(t, subscriptions.NewStore(nil, nil)) // authorizing reads no database
	team := webhooks.Account{ID: 7, Plan: webhooks.PlanTeam}
	developerPlan := webhooks.Account{ID: 8, Plan: webhooks.PlanDeveloper}
	tests := []struct {
		name      string
		p         *webhooks.Principal
		accountID string
		write     bool
		code      string // "" when allowed
		canWrite  bool
	}{
		{"MalformedAccountIDNotFound", user(team, "developer"), "7x", false, webhooks.ENOTFOUND, false},
		{"OtherAccountForbidden", user(team, "developer"), "9", false, webhooks.EFORBIDDEN, false},
		{"DeveloperPlanForbidden", user(developerPlan, "developer"), "8", false, webhooks.EFORBIDDEN, false},
		{"ReaderMayRead", user(team, "read_only"), "7", false, "", false},
		{"ReaderMayNotWrite", user(team, "read_only"), "7", true, webhooks.EFORBIDDEN, false},
		{"DeveloperLicenseMayWrite", user(team, "developer"), "7", true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := svc.Authorize(tt.p, tt.accountID, tt.write)
			if got := webhooks.ErrorCode(err); got != tt.code {
				t.Fatalf("Authorize error %v (code %q), want code %q", err, got, tt.code)
			}
			if err != nil {
				return
			}
			if a.Account() != team || (a.WriteErr() == nil) != tt.canWrite {
				t.Fatalf("access to %+v, write error %v; want %+v, may write %v", a.Account(), a.WriteErr(), team, tt.canWrite)
			}
		})
	}
}

func TestCreate_StoresInTheAuthorizedAccount(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	in := validInput()
	in.AccountID = f.b.ID // ignored: the access decides the account
	created, secret, err := svc.Create(t.Context(), mustAuthorize(t, svc, user(f.a, "developer"), f.a, true), in)
	if err != nil {
		t.Fatal(err)
	}
	if created.AccountID != f.a.ID || secret == "" {
		t.Fatalf("created in account %d with secret %q, want account %d and a secret", created.AccountID, secret, f.a.ID)
	}
	if _, err := f.store.Get(t.Context(), f.a.ID, created.ID); err != nil {
		t.Fatalf("stored subscription: %v", err)
	}
}

func TestCreate_RefusesReadOnlyAccess(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	a := mustAuthorize(t, svc, user(f.a, "read_only"), f.a, false)
	if _, _, err := svc.Create(t.Context(), a, validInput()); webhooks.ErrorCode(err) != webhooks.EFORBIDDEN {
		t.Fatalf("Create by a reader = %v, want forbidden", err)
	}
	if page, _ := f.store.List(t.Context(), f.a.ID, 10, 0); page.Total != 0 {
		t.Fatalf("%d subscriptions stored", page.Total)
	}
}

func TestCreate_ReportsEveryProblemDestinationLast(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	in := validInput()
	in.Name, in.EventTypes, in.ClientURL = "", nil, privateURL
	_, _, err := svc.Create(t.Context(), mustAuthorize(t, svc, user(f.a, "developer"), f.a, true), in)
	var problems webhooks.Problems
	if !errors.As(err, &problems) {
		t.Fatalf("Create = %v, want webhooks.Problems", err)
	}
	var fields []string
	for _, p := range problems {
		fields = append(fields, p.Field)
	}
	if got := strings.Join(fields, ","); got != "name,event_types,client_url" {
		t.Fatalf("problems name %s, want name,event_types,client_url", got)
	}
	// One problem reported (the API) is the first field problem.
	if msg := webhooks.ErrorMessage(err); !strings.HasPrefix(msg, "name ") {
		t.Fatalf("reported message %q, want the name problem", msg)
	}
	if page, _ := f.store.List(t.Context(), f.a.ID, 10, 0); page.Total != 0 {
		t.Fatalf("%d subscriptions stored", page.Total)
	}
}

func TestUpdate_ChecksTheNewDestination(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	a := mustAuthorize(t, svc, user(f.a, "developer"), f.a, true)
	created, _, err := svc.Create(t.Context(), a, validInput())
	if err != nil {
		t.Fatal(err)
	}
	private := privateURL
	_, err = svc.Update(t.Context(), a, created.ID, webhooks.SubscriptionUpdate{ClientURL: &private})
	var e *webhooks.Error
	if !errors.As(err, &e) || e.Code != webhooks.EINVALID || e.Field != "client_url" {
		t.Fatalf("Update to a private address = %v, want a client_url problem", err)
	}
	if got, _ := svc.Get(t.Context(), a, created.ID); got.ClientURL != publicURL {
		t.Fatalf("client_url is %q after a refused update", got.ClientURL)
	}
}

func TestMalformedSubscriptionIDIsNotFound(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	a := mustAuthorize(t, svc, user(f.a, "developer"), f.a, true)
	blank := ""
	for name, call := range map[string]func() error{
		"Get": func() error { _, err := svc.Get(t.Context(), a, "nope"); return err },
		"Update": func() error {
			_, err := svc.Update(t.Context(), a, "nope", webhooks.SubscriptionUpdate{Name: &blank})
			return err
		},
		"Delete": func() error { return svc.Delete(t.Context(), a, "nope") },
	} {
		if err := call(); !errors.Is(err, subscriptions.ErrNotFound) {
			t.Errorf("%s with a malformed id = %v, want ErrNotFound", name, err)
		}
	}
}

func TestAccessNotFromAuthorizeIsRefused(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	var zero subscriptions.Access
	if _, err := svc.List(t.Context(), zero, 10, 0); webhooks.ErrorCode(err) != webhooks.EINTERNAL {
		t.Errorf("List with a zero Access = %v, want an internal error", err)
	}
	if _, _, err := svc.Create(t.Context(), zero, validInput()); webhooks.ErrorCode(err) != webhooks.EINTERNAL {
		t.Errorf("Create with a zero Access = %v, want an internal error", err)
	}
}

func TestCheckNew_ReportsWithoutStoring(t *testing.T) {
	f := newFixture(t)
	svc := mustNewService(t, f.store)
	if err := svc.CheckNew(t.Context(), validInput()); err != nil {
		t.Fatalf("CheckNew(valid) = %v", err)
	}
	in := validInput()
	in.ClientURL = privateURL
	if err := svc.CheckNew(t.Context(), in); webhooks.ErrorCode(err) != webhooks.EINVALID {
		t.Fatalf("CheckNew(private address) = %v, want invalid", err)
	}
	if page, _ := f.store.List(t.Context(), f.a.ID, 10, 0); page.Total != 0 {
		t.Fatalf("%d subscriptions stored", page.Total)
	}
}
