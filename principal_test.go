package webhooks_test

import (
	"testing"

	"github.com/jobhooks/jobhooks"
)

func TestPrincipal_AccountMembership(t *testing.T) {
	p := &webhooks.Principal{Memberships: []webhooks.Membership{{Account: webhooks.Account{ID: 7, Plan: "team"}}}}
	tests := []struct {
		accountID string
		wantCode  string
	}{
		{"7", ""},
		{"8", webhooks.EFORBIDDEN},
		{"0", webhooks.ENOTFOUND},
		{"-7", webhooks.ENOTFOUND},
		{"seven", webhooks.ENOTFOUND},
		{"", webhooks.ENOTFOUND},
	}
	for _, tt := range tests {
		m, err := p.AccountMembership(tt.accountID)
		if code := webhooks.ErrorCode(err); code != tt.wantCode {
			t.Errorf("AccountMembership(%q) code = %q, want %q", tt.accountID, code, tt.wantCode)
		}
		if err == nil && m.Account.ID != 7 {
			t.Errorf("AccountMembership(%q) = account %d", tt.accountID, m.Account.ID)
		}
	}
}
