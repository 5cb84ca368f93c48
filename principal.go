package webhooks

import (
	"slices"
	"strconv"
)

// Plans an account can be on.
const (
	PlanDeveloper  = "developer"
	PlanTeam       = "team"
	PlanEnterprise = "enterprise"
)

// Plans lists the valid plans.
var Plans = []string{PlanDeveloper, PlanTeam, PlanEnterprise}

// Licenses a user can hold in an account.
var Licenses = []string{"developer", "read_only", "analyst", "it"}

// PermissionSets that can be granted to users and service tokens.
var PermissionSets = []string{
	"account_admin", "admin", "developer", "member", "read_only",
	"analyst", "job_admin", "job_viewer", "git_admin", "billing_admin",
	"manage_marketplace_apps", "owner", "security_admin", "stakeholder",
}

// Account is a tenant.
type Account struct {
	ID         int64
	Identifier string // act_...
	Name       string
	Plan       string
}

// PrincipalKind tells what sort of credential authenticated a request.
type PrincipalKind int

const (
	PrincipalUser PrincipalKind = iota + 1
	PrincipalServiceToken
)

// Membership is what a principal holds in one account.
type Membership struct {
	Account        Account
	License        string   // users only
	PermissionSets []string // users and service tokens
}

// Principal is the authenticated caller of a request.
type Principal struct {
	Kind           PrincipalKind
	UserID         int64 // PrincipalUser
	ServiceTokenID int64 // PrincipalServiceToken
	// Name is what people know the credential by: the user's email, or the
	// service token's name. For display only, never for access decisions.
	Name        string
	Memberships []Membership
}

// Membership returns the caller's membership in accountID, if any.
func (p *Principal) Membership(accountID int64) (Membership, bool) {
	for _, m := range p.Memberships {
		if m.Account.ID == accountID {
			return m, true
		}
	}
	return Membership{}, false
}

// HasPermissionSet reports whether the membership grants any of sets.
func (m Membership) HasPermissionSet(sets ...string) bool {
	for _, s := range sets {
		if slices.Contains(m.PermissionSets, s) {
			return true
		}
	}
	return false
}

// AccountMembership resolves an account id as it appears in a path to the
// caller's membership: a malformed id is not found, an account the caller
// does not belong to (whether it exists or not) is forbidden.
func (p *Principal) AccountMembership(accountID string) (Membership, error) {
	id, err := strconv.ParseInt(accountID, 10, 64)
	if err != nil || id <= 0 {
		return Membership{}, Errorf(ENOTFOUND, "Account not found.")
	}
	m, ok := p.Membership(id)
	if !ok {
		return Membership{}, Errorf(EFORBIDDEN, "You do not have access to account %d.", id)
	}
	return m, nil
}
