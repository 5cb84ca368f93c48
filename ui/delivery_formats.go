package ui

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/webhooksettings"
)

// formatForm is the format, notify_on, filter and routing key part of the
// delivery settings page, as stored or as typed.
type formatForm struct {
	Format, NotifyOn, Filter string
	// RoutingKeySet: a PagerDuty routing key is stored (never shown).
	RoutingKeySet bool
	// Check is the filter check's result, nil until one ran.
	Check *filterCheckView
}

// filterCheckView is which of the account's latest events a filter would
// have matched.
type filterCheckView struct {
	Filter  string
	Rows    []filterCheckRow
	Matched int
	// Compiled: the filter compiled (else its error is beside the field).
	Compiled bool
}

type filterCheckRow struct {
	webhooksettings.CheckedEvent
	// Subscribed: the webhook's event types and jobs take the event; the
	// filter only matters for those.
	Subscribed bool
}

func formatFormOf(st webhooksettings.Settings) formatForm {
	f := formatForm{Format: st.Format, NotifyOn: st.NotifyOn, RoutingKeySet: st.HasPagerDutyRoutingKey}
	if st.Filter != nil {
		f.Filter = *st.Filter
	}
	return f
}

// readFormatForm reads the posted format part: an empty filter is none,
// an empty routing key keeps the stored one.
func readFormatForm(r *http.Request) (formatForm, webhooksettings.Update) {
	f := formatForm{Format: r.PostFormValue("format"), NotifyOn: r.PostFormValue("notify_on"), Filter: r.PostFormValue("filter")}
	u := webhooksettings.Update{Format: &f.Format, NotifyOn: &f.NotifyOn, Filter: &webhooksettings.FilterInput{}}
	if strings.TrimSpace(f.Filter) != "" {
		u.Filter.Expr = &f.Filter
	}
	if key := strings.TrimSpace(r.PostFormValue("pagerduty_routing_key")); key != "" {
		u.PagerDutyRoutingKey = &key
	}
	return f, u
}

// saveDeliveryFormat saves the format, notify_on, filter and routing key
// through the same use case as PUT .../delivery-settings, keeping the
// rest of the settings. Every problem is shown beside its field.
func (s *Server) saveDeliveryFormat(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, true)
	if err != nil {
		return err
	}
	typed, u := readFormatForm(r)
	_, err = s.deliverySettings.Update(r.Context(), a, sub.ID, u)
	if err == nil {
		s.logger.InfoContext(r.Context(), "webhook delivery format set", "account_id", a.Account().ID,
			"subscription_id", sub.ID, "format", typed.Format, "notify_on", typed.NotifyOn)
		http.Redirect(w, r, deliverySettingsPath(a.Account().ID, sub.ID)+"?done=format#format-title", http.StatusSeeOther)
		return nil
	}
	v, err := s.invalidSettingsView(r, sess, a, sub, err)
	if err != nil {
		return err
	}
	typed.RoutingKeySet = v.Format.RoutingKeySet // a typed key is not sent back to the browser
	v.Format = typed
	return s.render(w, r, http.StatusBadRequest, "webhook_delivery_settings", sess, v)
}

// checkDeliveryFilter shows which of the account's latest events the
// filter as typed would have matched; nothing is saved. Reading the
// webhook is enough.
func (s *Server) checkDeliveryFilter(w http.ResponseWriter, r *http.Request, sess *session) error {
	a, sub, err := s.loadWebhook(r, sess, false)
	if err != nil {
		return err
	}
	v, err := s.settingsView(r, sess, a, sub)
	if err != nil {
		return err
	}
	expr := r.PostFormValue("filter")
	if v.CanWrite {
		typed, _ := readFormatForm(r)
		typed.RoutingKeySet = v.Format.RoutingKeySet
		v.Format = typed
	}
	check := &filterCheckView{Filter: expr}
	events, err := s.deliverySettings.CheckFilter(r.Context(), a, sub.ID, expr)
	switch {
	case err == nil:
		check.Compiled = true
		for _, e := range events {
			row := filterCheckRow{CheckedEvent: e, Subscribed: takes(sub, e)}
			if e.Matched {
				check.Matched++
			}
			check.Rows = append(check.Rows, row)
		}
	case !v.Errors.addInvalid(err):
		return err
	}
	v.Format.Check = check
	return s.render(w, r, http.StatusOK, "webhook_delivery_settings", sess, v)
}

// takes reports whether sub's event types and jobs take the event.
func takes(sub webhooks.Subscription, e webhooksettings.CheckedEvent) bool {
	if !slices.Contains(sub.EventTypes, e.EventType) {
		return false
	}
	if len(sub.JobIDs) == 0 {
		return true
	}
	id, err := strconv.ParseInt(e.Data.JobID, 10, 64)
	return err == nil && slices.Contains(sub.JobIDs, id)
}

// FormatLabel names the format for people.
func (f formatForm) FormatLabel() string {
	switch f.Format {
	case webhooksettings.FormatSlack:
		return "Slack"
	case webhooksettings.FormatTeams:
		return "Microsoft Teams"
	case webhooksettings.FormatPagerDuty:
		return "PagerDuty"
	default:
		return "Standard"
	}
}

// CheckedEvents is how many of the account's latest events a check reads.
func (deliverySettingsView) CheckedEvents() int { return webhooksettings.CheckedEvents }
