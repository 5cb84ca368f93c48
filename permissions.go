package webhooks

// CanReadWebhooks allows every credential of the account to read its
// webhooks; the plan must include webhooks.
func CanReadWebhooks(m Membership) error {
	if m.Account.Plan == PlanDeveloper {
		return errPlanWithoutWebhooks
	}
	return nil
}

var errPlanWithoutWebhooks = Errorf(EFORBIDDEN,
	"Webhooks need the Team or Enterprise plan; this account is on the Developer plan.")

// CanWriteWebhooks applies spec 5.1 to create, update, delete, test,
// redeliver and listen (webhooks listen opens a webhook and decides its
// deliveries' outcomes):
//   - Enterprise: the account_admin, admin or developer permission set, for
//     users and service tokens alike;
//   - Team: a developer license for users; the account_admin or member
//     permission set for service tokens;
//   - Developer plan: no webhooks at all.
func CanWriteWebhooks(kind PrincipalKind, m Membership) error {
	switch m.Account.Plan {
	case PlanEnterprise:
		if m.HasPermissionSet("account_admin", "admin", "developer") {
			return nil
		}
		return Errorf(EFORBIDDEN, "Changing webhooks needs the Account Admin, Admin or Developer permission set.")
	case PlanTeam:
		if kind == PrincipalServiceToken {
			if m.HasPermissionSet("account_admin", "member") {
				return nil
			}
			return Errorf(EFORBIDDEN, "Changing webhooks with a service token needs the Account Admin or Member permission set.")
		}
		if m.License == "developer" {
			return nil
		}
		return Errorf(EFORBIDDEN, "Changing webhooks needs a Developer license.")
	default:
		return errPlanWithoutWebhooks
	}
}
