package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/identity"
)

// demoAccount is what dev mode prints so the user can call the API at once.
type demoAccount struct {
	AccountID int64
	UserID    int64
	Token     string
	TokenKind string
}

// ensureDemoAccount creates a Team-plan demo account with an admin user on
// first run. Tokens are stored hashed in the database, so the token shown is
// also kept in tokenFile; later runs show it again while it still
// authenticates as an admin of the demo account, and only otherwise (rotated,
// deleted, another database) mint an account_admin service token in its place.
func ensureDemoAccount(ctx context.Context, store *identity.Store, tokenFile string) (demoAccount, error) {
	const name = "Demo account"
	a, found, err := store.AccountByName(ctx, name)
	if err != nil {
		return demoAccount{}, err
	}
	if !found {
		a, err = store.CreateAccount(ctx, name, "team")
		if err != nil {
			return demoAccount{}, err
		}
		userID, token, err := store.CreateUser(ctx, identity.NewUser{
			AccountID: a.ID, Email: "admin@demo.example", License: "developer", PermissionSets: []string{"account_admin"},
		})
		if err != nil {
			return demoAccount{}, err
		}
		if err := writeSecretFile(tokenFile, token); err != nil {
			return demoAccount{}, err
		}
		return demoAccount{AccountID: a.ID, UserID: userID, Token: token, TokenKind: "personal API key of admin@demo.example"}, nil
	}
	if demo, ok, err := storedDemoToken(ctx, store, a.ID, tokenFile); err != nil || ok {
		return demo, err
	}
	_, token, err := store.CreateServiceToken(ctx, a.ID, "dev session", []string{"account_admin"})
	if err != nil {
		return demoAccount{}, err
	}
	if err := writeSecretFile(tokenFile, token); err != nil {
		return demoAccount{}, err
	}
	return demoAccount{AccountID: a.ID, Token: token, TokenKind: "service token (account_admin); the admin user's key was shown on first run"}, nil
}

// storedDemoToken returns the token kept in tokenFile if it still
// authenticates with account_admin on accountID.
func storedDemoToken(ctx context.Context, store *identity.Store, accountID int64, tokenFile string) (demoAccount, bool, error) {
	b, err := os.ReadFile(tokenFile)
	if errors.Is(err, os.ErrNotExist) {
		return demoAccount{}, false, nil
	} else if err != nil {
		return demoAccount{}, false, fmt.Errorf("read %s: %w", tokenFile, err)
	}
	token := strings.TrimSpace(string(b))
	p, err := store.Authenticate(ctx, token)
	if webhooks.ErrorCode(err) == webhooks.EUNAUTHORIZED {
		return demoAccount{}, false, nil
	} else if err != nil {
		return demoAccount{}, false, err
	}
	m, ok := p.Membership(accountID)
	if !ok || !slices.Contains(m.PermissionSets, "account_admin") {
		return demoAccount{}, false, nil
	}
	if p.Kind == webhooks.PrincipalUser {
		return demoAccount{AccountID: accountID, UserID: p.UserID, Token: token, TokenKind: "personal API key of " + p.Name}, true, nil
	}
	return demoAccount{AccountID: accountID, Token: token, TokenKind: "service token (account_admin)"}, true, nil
}
