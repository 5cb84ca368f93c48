package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCreateSubscription_Validation checks every rule: a 400 whose
// developer_message names the field, and nothing stored.
func TestCreateSubscription_Validation(t *testing.T) {
	s := newSubsAPI(t, nil)
	with := func(field string, value any) map[string]any {
		b := validBody()
		b[field] = value
		return b
	}
	without := func(field string) map[string]any {
		b := validBody()
		delete(b, field)
		return b
	}
	tests := []struct {
		name    string
		body    any
		field   string // named in developer_message; "" for whole-body errors
		message string // part of user_message
	}{
		{"NameMissing", without("name"), "name", "name is required"},
		{"NameEmpty", with("name", ""), "name", "name is required"},
		{"NameBlank", with("name", "   "), "name", "must not be blank"},
		{"NameTooLong", with("name", strings.Repeat("n", 256)), "name", "at most 255 characters"},
		{"NameControlChar", with("name", "a\x00b"), "name", "control characters"},
		{"NameWrongType", with("name", 5), "name", "name must be of type string"},
		{"DescriptionTooLong", with("description", strings.Repeat("d", 1001)), "description", "at most 1000 characters"},
		{"DescriptionNUL", with("description", "a\x00"), "description", "control characters"},
		{"DescriptionWrongType", with("description", []string{"x"}), "description", "must be of type string"},
		{"ClientURLMissing", without("client_url"), "client_url", "client_url is required"},
		{"ClientURLEmpty", with("client_url", ""), "client_url", "client_url is required"},
		{"ClientURLWrongType", with("client_url", map[string]any{}), "client_url", "must be of type string"},
		{"ClientURLRelative", with("client_url", "/hooks"), "client_url", "absolute http or https URL"},
		{"ClientURLScheme", with("client_url", "ftp://"+publicHost+"/"), "client_url", "http or https"},
		{"ClientURLNoHost", with("client_url", "https:///x"), "client_url", "must include a host"},
		{"ClientURLCredentials", with("client_url", "https://u:p@"+publicHost+"/"), "client_url", "user name or password"},
		{"ClientURLTooLong", with("client_url", "https://"+publicHost+"/"+strings.Repeat("p", 2048)), "client_url", "at most 2048 characters"},
		{"ClientURLUnresolvable", with("client_url", "https://nowhere.example.com/"), "client_url", "could not be resolved"},
		{"EventTypesMissing", without("event_types"), "event_types", "job.run.started, job.run.completed, job.run.errored"},
		{"EventTypesEmpty", with("event_types", []string{}), "event_types", "event_types is required"},
		{"EventTypesUnknown", with("event_types", []string{"job.run.exploded"}), "event_types", "allowed values are job.run.started, job.run.completed, job.run.errored"},
		{"EventTypesDuplicate", with("event_types", []string{"job.run.started", "job.run.started"}), "event_types", "more than once"},
		{"EventTypesWrongType", with("event_types", "job.run.started"), "event_types", "must be of type array"},
		{"EventTypesElementWrongType", with("event_types", []any{1}), "event_types", "must be of type string"},
		{"JobIDsZero", with("job_ids", []int{0}), "job_ids", "positive integer"},
		{"JobIDsNegative", with("job_ids", []int{-3}), "job_ids", "positive integer"},
		{"JobIDsFraction", with("job_ids", []any{1.5}), "job_ids", "job_ids[0] must be a job id"},
		{"JobIDsExponent", `{"name":"n","client_url":"https://hooks.example.com/","event_types":["job.run.started"],"job_ids":[1e3]}`, "job_ids", "must be a job id"},
		{"JobIDsNonDigitString", with("job_ids", []string{"12a"}), "job_ids", "job_ids[0] must be a job id"},
		{"JobIDsNegativeString", with("job_ids", []string{"-1"}), "job_ids", "must be a job id"},
		{"JobIDsOverflow", with("job_ids", []string{"9223372036854775808"}), "job_ids", "not a valid job id"},
		{"JobIDsDuplicate", with("job_ids", []any{4, "4"}), "job_ids", "more than once"},
		{"JobIDsTooMany", with("job_ids", manyJobIDs(1001)), "job_ids", "at most 1000"},
		{"JobIDsWrongType", with("job_ids", "1,2"), "job_ids", "array of job ids"},
		{"JobIDsElementBool", with("job_ids", []any{true}), "job_ids", "must be a job id"},
		{"ActiveWrongType", with("active", "yes"), "active", "must be of type boolean"},
		{"BodyArray", `[]`, "", "JSON object"},
		{"BodyString", `"x"`, "", "JSON object"},
		{"BodyEmpty", ``, "", "JSON object"},
		{"BodyNotJSON", `{"name": `, "", "not valid JSON"},
		{"BodyTwoObjects", `{} {}`, "", "single JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPost, s.subsURL(s.Account.ID), s.Writer, tt.body)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if tt.field != "" && !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+tt.field+`"`) {
				t.Errorf("developer_message %q does not name %q", resp.Env.Status.DeveloperMessage, tt.field)
			}
			if !strings.Contains(resp.Env.Status.UserMessage, tt.message) {
				t.Errorf("user_message %q does not contain %q", resp.Env.Status.UserMessage, tt.message)
			}
		})
	}
	if n := s.subscriptionRowCount(t); n != 0 {
		t.Fatalf("%d subscriptions stored by invalid requests, want 0", n)
	}
}

func manyJobIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i + 1
	}
	return ids
}

// TestUpdateSubscription_Validation: the same rules for present fields, and
// the stored subscription does not change.
func TestUpdateSubscription_Validation(t *testing.T) {
	s := newSubsAPI(t, nil)
	created := s.mustCreateSub(t, nil)
	tests := []struct {
		name  string
		body  any
		field string
	}{
		{"NameEmpty", map[string]any{"name": ""}, "name"},
		{"NameTooLong", map[string]any{"name": strings.Repeat("n", 256)}, "name"},
		{"NameWrongType", map[string]any{"name": false}, "name"},
		{"DescriptionTooLong", map[string]any{"description": strings.Repeat("d", 1001)}, "description"},
		{"ClientURLEmpty", map[string]any{"client_url": ""}, "client_url"},
		{"ClientURLLoopback", map[string]any{"client_url": "http://127.0.0.1/"}, "client_url"},
		{"ClientURLCredentials", map[string]any{"client_url": "https://a:b@" + publicHost + "/"}, "client_url"},
		{"EventTypesEmpty", map[string]any{"event_types": []string{}}, "event_types"},
		{"EventTypesUnknown", map[string]any{"event_types": []string{"x"}}, "event_types"},
		{"JobIDsDuplicate", map[string]any{"job_ids": []int{1, 1}}, "job_ids"},
		{"JobIDsNegative", map[string]any{"job_ids": []int{-1}}, "job_ids"},
		{"ActiveWrongType", map[string]any{"active": 1}, "active"},
		{"ValidNameButBadURL", map[string]any{"name": "new", "client_url": "ftp://x/"}, "client_url"},
		{"BodyArray", `[]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := doJSON(t, http.MethodPut, s.subURL(s.Account.ID, created.ID), s.Writer, tt.body)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if tt.field != "" && !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+tt.field+`"`) {
				t.Errorf("developer_message %q does not name %q", resp.Env.Status.DeveloperMessage, tt.field)
			}
		})
	}
	after := s.mustGetSub(t, created.ID)
	created.HMACSecret = nil
	if after.UpdatedAt != created.UpdatedAt || after.Name != created.Name || after.ClientURL != created.ClientURL {
		t.Fatalf("invalid updates changed the subscription: before %+v after %+v", created, after)
	}
}

func TestListSubscriptions_PagingParameterErrors(t *testing.T) {
	s := newSubsAPI(t, nil)
	tests := []struct{ query, field string }{
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=-1", "limit"},
		{"limit=ten", "limit"},
		{"limit=", "limit"},
		{"limit=99999999999", "limit"},
		{"offset=-1", "offset"},
		{"offset=x", "offset"},
		{"offset=1.5", "offset"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp := doJSON(t, http.MethodGet, s.subsURL(s.Account.ID)+"?"+tt.query, s.Writer, nil)
			requireErrorEnvelope(t, resp, http.StatusBadRequest)
			if !strings.Contains(resp.Env.Status.DeveloperMessage, `"`+tt.field+`"`) {
				t.Errorf("developer_message %q does not name %q", resp.Env.Status.DeveloperMessage, tt.field)
			}
		})
	}
}
