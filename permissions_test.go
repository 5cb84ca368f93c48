package webhooks_test

import (
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

func TestCanWriteWebhooks(t *testing.T) {
	member := func(plan, license string, sets ...string) webhooks.Membership {
		return webhooks.Membership{Account: webhooks.Account{ID: 1, Plan: plan}, License: license, PermissionSets: sets}
	}
	user, token := webhooks.PrincipalUser, webhooks.PrincipalServiceToken
	tests := []struct {
		name    string
		kind    webhooks.PrincipalKind
		m       webhooks.Membership
		allowed bool
	}{
		{"EnterpriseAccountAdminUser", user, member("enterprise", "read_only", "account_admin"), true},
		{"EnterpriseAdminToken", token, member("enterprise", "", "admin"), true},
		{"EnterpriseDeveloperSet", user, member("enterprise", "developer", "developer"), true},
		{"EnterpriseMemberTokenDenied", token, member("enterprise", "", "member"), false},
		{"EnterpriseDeveloperLicenseAloneDenied", user, member("enterprise", "developer", "read_only"), false},
		{"TeamDeveloperLicenseUser", user, member("team", "developer", "member"), true},
		{"TeamReadOnlyLicenseUserDenied", user, member("team", "read_only", "account_admin"), false},
		{"TeamMemberToken", token, member("team", "", "member"), true},
		{"TeamAccountAdminToken", token, member("team", "", "account_admin"), true},
		{"TeamReadOnlyTokenDenied", token, member("team", "", "read_only"), false},
		{"TeamDeveloperSetTokenDenied", token, member("team", "", "developer"), false},
		{"DeveloperPlanDenied", user, member("developer", "developer", "account_admin"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhooks.CanWriteWebhooks(tt.kind, tt.m)
			if (err == nil) != tt.allowed {
				t.Fatalf("CanWriteWebhooks = %v, want allowed=%v", err, tt.allowed)
			}
			if err != nil && webhooks.ErrorCode(err) != webhooks.EFORBIDDEN {
				t.Fatalf("code = %s, want forbidden", webhooks.ErrorCode(err))
			}
		})
	}
}

func TestCanReadWebhooks_DeveloperPlanMentionsPlans(t *testing.T) {
	err := webhooks.CanReadWebhooks(webhooks.Membership{Account: webhooks.Account{Plan: "developer"}})
	if err == nil || webhooks.ErrorCode(err) != webhooks.EFORBIDDEN {
		t.Fatalf("err = %v", err)
	}
	if msg := webhooks.ErrorMessage(err); !strings.Contains(msg, "Team") || !strings.Contains(msg, "Enterprise") {
		t.Fatalf("message %q does not name the plans", msg)
	}
}
