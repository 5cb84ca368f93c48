package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCreateSubscription_FieldNamesAreExact: the spec's field names are
// exact; "NAME" is an unknown field like any other, so a body that names a
// required field only in another case lacks it.
func TestCreateSubscription_FieldNamesAreExact(t *testing.T) {
	s := newSubsAPI(t, nil)
	tests := []struct {
		name    string
		rename  string // the field sent under another case
		as      string
		message string
	}{
		{"NameUpperCase", "name", "NAME", "name is required"},
		{"NameTitleCase", "name", "Name", "name is required"},
		{"ClientURLUpperCase", "client_url", "CLIENT_URL", "client_url is required"},
		{"EventTypesMixedCase", "event_types", "Event_Types", "event_types is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := s.subscriptionRowCount(t)
			b := validBody()
			b[tt.as] = b[tt.rename]
			delete(b, tt.rename)
			resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, b)
			requireFieldError(t, resp, tt.rename, tt.message)
			if n := s.subscriptionRowCount(t); n != rows {
				t.Errorf("stored a row: %d rows, want %d", n, rows)
			}
		})
	}
	// Optional fields under another case are ignored: the defaults apply.
	b := validBody()
	delete(b, "active")
	delete(b, "description")
	b["ACTIVE"], b["Description"] = false, "ignored"
	resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, b)
	requireStatus(t, resp, http.StatusCreated)
	var got subItem
	resp.decodeData(t, &got)
	if !got.Active || got.Description != "" {
		t.Errorf("inexact optional fields were applied: active %v description %q", got.Active, got.Description)
	}
}

// TestUpdateSubscription_FieldNamesAreExact: an update whose members match
// no field exactly changes nothing, like one with only unknown fields.
func TestUpdateSubscription_FieldNamesAreExact(t *testing.T) {
	s := newSubsAPI(t, nil)
	sub := s.mustCreateSub(t, nil)
	resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, sub.ID), s.Writer,
		`{"NAME":"renamed","Active":false,"DESCRIPTION":"changed","Event_types":["job.run.started"]}`)
	requireStatus(t, resp, http.StatusOK)
	got := s.mustGetSub(t, sub.ID)
	if got.Name != sub.Name || !got.Active || got.Description != sub.Description || strings.Join(got.EventTypes, ",") != strings.Join(sub.EventTypes, ",") {
		t.Errorf("inexact member names changed the subscription: %+v", got)
	}
}
