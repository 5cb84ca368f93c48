package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

func newStore(t *testing.T) (*identity.Store, *testenv.Database) {
	t.Helper()
	db := testenv.NewDatabase(t)
	return identity.NewStore(db.Pool), db
}

func mustAccount(t *testing.T, s *identity.Store, name, plan string) webhooks.Account {
	t.Helper()
	a, err := s.CreateAccount(context.Background(), name, plan)
	if err != nil {
		t.Fatalf("create account: %v", err)
	}
	return a
}

func requireFieldError(t *testing.T, err error, field string) {
	t.Helper()
	var e *webhooks.Error
	if !errors.As(err, &e) || e.Code != webhooks.EINVALID || e.Field != field {
		t.Fatalf("error = %v, want EINVALID naming field %q", err, field)
	}
}

func countRows(t *testing.T, db *testenv.Database, table string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestCreateAccount(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	b := mustAccount(t, s, "Acme", webhooks.PlanEnterprise)
	if a.ID <= 0 || b.ID <= a.ID {
		t.Errorf("ids = %d, %d; want positive and increasing", a.ID, b.ID)
	}
	if !strings.HasPrefix(a.Identifier, "act_") || len(a.Identifier) < 20 || a.Identifier == b.Identifier {
		t.Errorf("identifiers %q, %q: want distinct act_ ids", a.Identifier, b.Identifier)
	}
	if a.Name != "Acme" || a.Plan != webhooks.PlanTeam {
		t.Errorf("account = %+v", a)
	}
	got, found, err := s.AccountByName(ctx, "Acme")
	if err != nil || !found || got != a {
		t.Errorf("AccountByName = %+v, %v, %v; want the oldest, %+v", got, found, err, a)
	}
	if _, found, err := s.AccountByName(ctx, "nobody"); err != nil || found {
		t.Errorf("AccountByName(nobody) = found %v, %v", found, err)
	}

	t.Run("ErrNameRequired", func(t *testing.T) {
		_, err := s.CreateAccount(ctx, "", webhooks.PlanTeam)
		requireFieldError(t, err, "name")
	})
	t.Run("ErrUnknownPlan", func(t *testing.T) {
		_, err := s.CreateAccount(ctx, "x", "gold")
		requireFieldError(t, err, "plan")
	})
}

func TestCreateUser_Validation(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	valid := identity.NewUser{AccountID: a.ID, Email: "a@example.com", License: "developer", PermissionSets: []string{"account_admin"}}

	tests := []struct {
		name   string
		change func(*identity.NewUser)
		field  string
	}{
		{"ErrEmailRequired", func(u *identity.NewUser) { u.Email = "" }, "email"},
		{"ErrEmailWithoutAt", func(u *identity.NewUser) { u.Email = "ada.example.com" }, "email"},
		{"ErrEmailWithoutDomain", func(u *identity.NewUser) { u.Email = "ada@" }, "email"},
		{"ErrEmailTwoAts", func(u *identity.NewUser) { u.Email = "a@b@c" }, "email"},
		{"ErrEmailWithSpace", func(u *identity.NewUser) { u.Email = "ada lovelace@example.com" }, "email"},
		{"ErrUnknownLicense", func(u *identity.NewUser) { u.License = "superuser" }, "license"},
		{"ErrNoPermissionSet", func(u *identity.NewUser) { u.PermissionSets = nil }, "permission_set"},
		{"ErrUnknownPermissionSet", func(u *identity.NewUser) { u.PermissionSets = []string{"admin", "root"} }, "permission_set"},
		{"ErrUnknownAccount", func(u *identity.NewUser) { u.AccountID = a.ID + 1000 }, "account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := valid
			tt.change(&in)
			_, _, err := s.CreateUser(ctx, in)
			requireFieldError(t, err, tt.field)
		})
	}
	// Nothing was stored by the refused calls.
	for _, table := range []string{"users", "memberships", "user_api_keys"} {
		if n := countRows(t, db, table); n != 0 {
			t.Errorf("%s has %d rows after refused creates, want 0", table, n)
		}
	}
}

func TestCreateUser_DuplicateEmailIsConflict(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	in := identity.NewUser{AccountID: a.ID, Email: "a@example.com", License: "developer", PermissionSets: []string{"member"}}
	if _, _, err := s.CreateUser(ctx, in); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.CreateUser(ctx, in)
	if webhooks.ErrorCode(err) != webhooks.ECONFLICT {
		t.Fatalf("second create with the same email: %v, want ECONFLICT", err)
	}
}

func TestAuthenticate(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	b := mustAccount(t, s, "Other", webhooks.PlanEnterprise)
	userID, userToken, err := s.CreateUser(ctx, identity.NewUser{AccountID: a.ID, Email: "a@example.com", License: "developer", PermissionSets: []string{"account_admin", "developer"}})
	if err != nil {
		t.Fatal(err)
	}
	stID, stToken, err := s.CreateServiceToken(ctx, b.ID, "ci", []string{"member"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(userToken, "whu_") || !strings.HasPrefix(stToken, "whs_") {
		t.Fatalf("token prefixes: %q, %q", userToken, stToken)
	}

	t.Run("UserKey", func(t *testing.T) {
		p, err := s.Authenticate(ctx, userToken)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != webhooks.PrincipalUser || p.UserID != userID || p.Name != "a@example.com" || len(p.Memberships) != 1 {
			t.Fatalf("principal = %+v", p)
		}
		m, ok := p.Membership(a.ID)
		if !ok || m.Account != a || m.License != "developer" || !m.HasPermissionSet("developer") {
			t.Fatalf("membership = %+v, %v", m, ok)
		}
		if _, ok := p.Membership(b.ID); ok {
			t.Fatal("user is a member of account b")
		}
	})
	t.Run("ServiceToken", func(t *testing.T) {
		p, err := s.Authenticate(ctx, stToken)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != webhooks.PrincipalServiceToken || p.ServiceTokenID != stID || p.Name != "ci" || p.UserID != 0 {
			t.Fatalf("principal = %+v", p)
		}
		m, ok := p.Membership(b.ID)
		if !ok || m.Account != b || !m.HasPermissionSet("member") || m.HasPermissionSet("account_admin") {
			t.Fatalf("membership = %+v, %v", m, ok)
		}
		if _, ok := p.Membership(a.ID); ok {
			t.Fatal("service token of b is a member of a")
		}
	})
	for name, token := range map[string]string{
		"Empty": "", "Unknown": "whu_nope", "OtherPrefix": "whs_" + strings.TrimPrefix(userToken, "whu_"),
		"Uppercased": strings.ToUpper(userToken),
	} {
		t.Run("ErrUnauthorized"+name, func(t *testing.T) {
			_, err := s.Authenticate(ctx, token)
			if webhooks.ErrorCode(err) != webhooks.EUNAUTHORIZED {
				t.Fatalf("Authenticate(%q) error = %v, want EUNAUTHORIZED", token, err)
			}
		})
	}
}

func TestCreateServiceToken_Validation(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	tests := []struct {
		name      string
		accountID int64
		tokenName string
		sets      []string
		field     string
	}{
		{"ErrNameRequired", a.ID, "", []string{"member"}, "name"},
		{"ErrNoPermissionSet", a.ID, "ci", nil, "permission_set"},
		{"ErrUnknownPermissionSet", a.ID, "ci", []string{"god"}, "permission_set"},
		{"ErrUnknownAccount", a.ID + 99, "ci", []string{"member"}, "account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.CreateServiceToken(ctx, tt.accountID, tt.tokenName, tt.sets)
			requireFieldError(t, err, tt.field)
		})
	}
	if n := countRows(t, db, "service_tokens"); n != 0 {
		t.Errorf("service_tokens has %d rows after refused creates, want 0", n)
	}
}

func TestRotateUserKey(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	a := mustAccount(t, s, "Acme", webhooks.PlanTeam)
	u1, tok1, err := s.CreateUser(ctx, identity.NewUser{AccountID: a.ID, Email: "1@example.com", License: "developer", PermissionSets: []string{"member"}})
	if err != nil {
		t.Fatal(err)
	}
	u2, tok2, err := s.CreateUser(ctx, identity.NewUser{AccountID: a.ID, Email: "2@example.com", License: "developer", PermissionSets: []string{"member"}})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("ErrUnauthorizedWithAnotherUsersKey", func(t *testing.T) {
		if _, _, err := s.RotateUserKey(ctx, u1, tok2); webhooks.ErrorCode(err) != webhooks.EUNAUTHORIZED {
			t.Fatalf("error = %v, want EUNAUTHORIZED", err)
		}
	})
	t.Run("ErrUnauthorizedWithWrongKey", func(t *testing.T) {
		if _, _, err := s.RotateUserKey(ctx, u1, "whu_wrong"); webhooks.ErrorCode(err) != webhooks.EUNAUTHORIZED {
			t.Fatalf("error = %v, want EUNAUTHORIZED", err)
		}
	})

	newTok, createdAt, err := s.RotateUserKey(ctx, u1, tok1)
	if err != nil {
		t.Fatal(err)
	}
	if newTok == tok1 || !strings.HasPrefix(newTok, "whu_") || createdAt.IsZero() {
		t.Fatalf("rotated = %q at %v", newTok, createdAt)
	}
	if _, err := s.Authenticate(ctx, tok1); webhooks.ErrorCode(err) != webhooks.EUNAUTHORIZED {
		t.Fatalf("old key still authenticates: %v", err)
	}
	if p, err := s.Authenticate(ctx, newTok); err != nil || p.UserID != u1 {
		t.Fatalf("new key: %+v, %v", p, err)
	}
	if p, err := s.Authenticate(ctx, tok2); err != nil || p.UserID != u2 {
		t.Fatalf("other user's key changed: %+v, %v", p, err)
	}
}
