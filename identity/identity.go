// Package identity keeps accounts, users, memberships and API credentials in
// PostgreSQL, and turns a presented token into the Principal behind it.
package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/db/dbq"
	"github.com/jobhooks/jobhooks/secrets"
)

// Store is the identity data of the service.
type Store struct {
	pool *pgxpool.Pool
	q    *dbq.Queries
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbq.New(pool)}
}

// CreateAccount makes an account with a fresh act_ identifier.
func (s *Store) CreateAccount(ctx context.Context, name, plan string) (webhooks.Account, error) {
	if name == "" {
		return webhooks.Account{}, webhooks.FieldErrorf("name", "name is required")
	}
	if !slices.Contains(webhooks.Plans, plan) {
		return webhooks.Account{}, webhooks.FieldErrorf("plan", "plan must be one of %v", webhooks.Plans)
	}
	a, err := s.q.CreateAccount(ctx, dbq.CreateAccountParams{
		Identifier: webhooks.NewID(webhooks.AccountIDPrefix), Name: name, Plan: plan,
	})
	if err != nil {
		return webhooks.Account{}, fmt.Errorf("create account: %w", err)
	}
	return webhooks.Account{ID: a.ID, Identifier: a.Identifier, Name: a.Name, Plan: a.Plan}, nil
}

// NewUser is what CreateUser needs.
type NewUser struct {
	AccountID      int64
	Email          string
	License        string
	PermissionSets []string
}

// CreateUser makes a user, a membership in one account and the user's first
// personal API key, which is returned and never stored in plain text.
func (s *Store) CreateUser(ctx context.Context, in NewUser) (userID int64, token string, err error) {
	if in.Email == "" {
		return 0, "", webhooks.FieldErrorf("email", "email is required")
	}
	if local, domain, ok := strings.Cut(in.Email, "@"); !ok || local == "" || domain == "" ||
		strings.ContainsAny(in.Email, " \t\r\n<>") || strings.Contains(domain, "@") {
		return 0, "", webhooks.FieldErrorf("email", "email %q is not an email address", in.Email)
	}
	if !slices.Contains(webhooks.Licenses, in.License) {
		return 0, "", webhooks.FieldErrorf("license", "license must be one of %v", webhooks.Licenses)
	}
	if err := validatePermissionSets(in.PermissionSets); err != nil {
		return 0, "", err
	}
	token = secrets.NewToken(secrets.UserKeyPrefix)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		if _, err := q.GetAccount(ctx, in.AccountID); errors.Is(err, pgx.ErrNoRows) {
			return webhooks.FieldErrorf("account", "account %d does not exist", in.AccountID)
		} else if err != nil {
			return err
		}
		u, err := q.CreateUser(ctx, in.Email)
		if isUniqueViolation(err) {
			return webhooks.Errorf(webhooks.ECONFLICT, "A user with email %s already exists.", in.Email)
		} else if err != nil {
			return err
		}
		userID = u.ID
		if err := q.AddMembership(ctx, dbq.AddMembershipParams{
			AccountID: in.AccountID, UserID: u.ID, License: in.License, PermissionSets: in.PermissionSets,
		}); err != nil {
			return err
		}
		return q.SetUserAPIKey(ctx, dbq.SetUserAPIKeyParams{UserID: u.ID, KeyHash: secrets.HashToken(token)})
	})
	if err != nil {
		return 0, "", fmt.Errorf("create user: %w", err)
	}
	return userID, token, nil
}

// CreateServiceToken makes an account-scoped service token.
func (s *Store) CreateServiceToken(ctx context.Context, accountID int64, name string, permissionSets []string) (id int64, token string, err error) {
	if name == "" {
		return 0, "", webhooks.FieldErrorf("name", "name is required")
	}
	if err := validatePermissionSets(permissionSets); err != nil {
		return 0, "", err
	}
	if _, err := s.q.GetAccount(ctx, accountID); errors.Is(err, pgx.ErrNoRows) {
		return 0, "", webhooks.FieldErrorf("account", "account %d does not exist", accountID)
	} else if err != nil {
		return 0, "", fmt.Errorf("create service token: %w", err)
	}
	token = secrets.NewToken(secrets.ServiceTokenPrefix)
	id, err = s.q.CreateServiceToken(ctx, dbq.CreateServiceTokenParams{
		AccountID: accountID, Name: name, TokenHash: secrets.HashToken(token), PermissionSets: permissionSets,
	})
	if err != nil {
		return 0, "", fmt.Errorf("create service token: %w", err)
	}
	return id, token, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func validatePermissionSets(sets []string) error {
	if len(sets) == 0 {
		return webhooks.FieldErrorf("permission_set", "at least one permission set is required")
	}
	for _, p := range sets {
		if !slices.Contains(webhooks.PermissionSets, p) {
			return webhooks.FieldErrorf("permission_set", "unknown permission set %q; allowed: %v", p, webhooks.PermissionSets)
		}
	}
	return nil
}

// Authenticate returns the Principal holding token, or EUNAUTHORIZED.
func (s *Store) Authenticate(ctx context.Context, token string) (*webhooks.Principal, error) {
	if token == "" {
		return nil, webhooks.Errorf(webhooks.EUNAUTHORIZED, "Authentication credentials were not provided.")
	}
	hash := secrets.HashToken(token)
	if !strings.HasPrefix(token, secrets.ServiceTokenPrefix) {
		// The prefix says which table can hold the token, so a request
		// costs one credential lookup, not a miss in the other table first.
		return s.authenticateUser(ctx, hash)
	}
	st, err := s.q.ServiceTokenByHash(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, webhooks.Errorf(webhooks.EUNAUTHORIZED, "Invalid token.")
	} else if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return &webhooks.Principal{
		Kind: webhooks.PrincipalServiceToken, ServiceTokenID: st.ID, Name: st.TokenName,
		Memberships: []webhooks.Membership{{
			Account:        webhooks.Account{ID: st.AccountID, Identifier: st.Identifier, Name: st.Name, Plan: st.Plan},
			PermissionSets: st.PermissionSets,
		}},
	}, nil
}

// RotateUserKey replaces userID's key, which must currently be currentToken,
// with a new one. Of concurrent rotations with one key exactly one succeeds;
// the others see an invalid key (EUNAUTHORIZED).
func (s *Store) RotateUserKey(ctx context.Context, userID int64, currentToken string) (token string, createdAt time.Time, err error) {
	token = secrets.NewToken(secrets.UserKeyPrefix)
	createdAt, err = s.q.RotateUserAPIKey(ctx, dbq.RotateUserAPIKeyParams{
		UserID: userID, OldHash: secrets.HashToken(currentToken), NewHash: secrets.HashToken(token),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, webhooks.Errorf(webhooks.EUNAUTHORIZED, "Invalid token.")
	} else if err != nil {
		return "", time.Time{}, fmt.Errorf("rotate api key: %w", err)
	}
	return token, createdAt, nil
}

// AccountByName returns the oldest account called name, if any.
func (s *Store) AccountByName(ctx context.Context, name string) (webhooks.Account, bool, error) {
	a, err := s.q.AccountByName(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return webhooks.Account{}, false, nil
	} else if err != nil {
		return webhooks.Account{}, false, fmt.Errorf("account by name: %w", err)
	}
	return webhooks.Account{ID: a.ID, Identifier: a.Identifier, Name: a.Name, Plan: a.Plan}, true, nil
}

// authenticateUser returns the Principal of a personal API key's hash.
func (s *Store) authenticateUser(ctx context.Context, hash []byte) (*webhooks.Principal, error) {
	user, err := s.q.UserByAPIKeyHash(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, webhooks.Errorf(webhooks.EUNAUTHORIZED, "Invalid token.")
	} else if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	rows, err := s.q.UserMemberships(ctx, user.UserID)
	if err != nil {
		return nil, fmt.Errorf("authenticate user: %w", err)
	}
	p := &webhooks.Principal{Kind: webhooks.PrincipalUser, UserID: user.UserID, Name: user.Email}
	for _, r := range rows {
		p.Memberships = append(p.Memberships, webhooks.Membership{
			Account: webhooks.Account{ID: r.ID, Identifier: r.Identifier, Name: r.Name, Plan: r.Plan},
			License: r.License, PermissionSets: r.PermissionSets,
		})
	}
	return p, nil
}
