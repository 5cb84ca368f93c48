package webhooks_test

import (
	"strings"
	"testing"

	"github.com/jobhooks/jobhooks"
)

func validSubscription() webhooks.Subscription {
	return webhooks.Subscription{
		AccountID: 1, Name: "alerts", ClientURL: "https://hooks.example.com/",
		EventTypes: []string{webhooks.EventRunStarted}, JobIDs: []int64{}, Active: true,
	}
}

func TestSubscriptionValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *webhooks.Subscription)
		field  string // "" means valid
	}{
		{"Valid", func(s *webhooks.Subscription) {}, ""},
		{"AllEventTypes", func(s *webhooks.Subscription) { s.EventTypes = webhooks.EventTypes }, ""},
		{"NameAt255Runes", func(s *webhooks.Subscription) { s.Name = strings.Repeat("é", 255) }, ""},
		{"DescriptionWithNewlines", func(s *webhooks.Subscription) { s.Description = "line 1\nline 2\ttab" }, ""},
		{"DescriptionAt1000", func(s *webhooks.Subscription) { s.Description = strings.Repeat("d", 1000) }, ""},
		{"JobIDsAt1000", func(s *webhooks.Subscription) { s.JobIDs = seq(1000) }, ""},
		{"NameEmpty", func(s *webhooks.Subscription) { s.Name = "" }, "name"},
		{"NameBlank", func(s *webhooks.Subscription) { s.Name = " \t" }, "name"},
		{"NameAt256Runes", func(s *webhooks.Subscription) { s.Name = strings.Repeat("é", 256) }, "name"},
		{"NameNewline", func(s *webhooks.Subscription) { s.Name = "a\nb" }, "name"},
		{"DescriptionTooLong", func(s *webhooks.Subscription) { s.Description = strings.Repeat("d", 1001) }, "description"},
		{"DescriptionNUL", func(s *webhooks.Subscription) { s.Description = "\x00" }, "description"},
		{"NameReplacementCharacterIsText", func(s *webhooks.Subscription) { s.Name = "a\uFFFDb" }, ""},
		{"NameInvalidUTF8", func(s *webhooks.Subscription) { s.Name = "caf\xe9" }, "name"},
		{"NameLoneSurrogateBytes", func(s *webhooks.Subscription) { s.Name = "a\xed\xa0\x80" }, "name"},
		{"DescriptionInvalidUTF8", func(s *webhooks.Subscription) { s.Description = "ok \xff\xfe" }, "description"},
		{"DescriptionTruncatedRune", func(s *webhooks.Subscription) { s.Description = "\xc3" }, "description"},
		{"ClientURLEmpty", func(s *webhooks.Subscription) { s.ClientURL = "" }, "client_url"},
		{"EventTypesNil", func(s *webhooks.Subscription) { s.EventTypes = nil }, "event_types"},
		{"EventTypeUnknown", func(s *webhooks.Subscription) { s.EventTypes = []string{"job.run.Started"} }, "event_types"},
		{"EventTypeDuplicate", func(s *webhooks.Subscription) { s.EventTypes = []string{"job.run.errored", "job.run.errored"} }, "event_types"},
		{"JobIDZero", func(s *webhooks.Subscription) { s.JobIDs = []int64{0} }, "job_ids"},
		{"JobIDNegative", func(s *webhooks.Subscription) { s.JobIDs = []int64{5, -5} }, "job_ids"},
		{"JobIDDuplicate", func(s *webhooks.Subscription) { s.JobIDs = []int64{5, 6, 5} }, "job_ids"},
		{"JobIDsTooMany", func(s *webhooks.Subscription) { s.JobIDs = seq(1001) }, "job_ids"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSubscription()
			tt.change(&s)
			err := s.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			e, ok := err.(*webhooks.Error)
			if !ok || e.Code != webhooks.EINVALID || e.Field != tt.field {
				t.Fatalf("Validate() = %#v, want EINVALID naming %s", err, tt.field)
			}
		})
	}
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestSubscriptionUpdateApply(t *testing.T) {
	tests := []struct {
		name   string
		active bool // before
		update webhooks.SubscriptionUpdate
		check  func(s webhooks.Subscription) bool
	}{
		{"EmptyChangesNothing", true, webhooks.SubscriptionUpdate{}, func(s webhooks.Subscription) bool {
			return s.Name == "alerts" && s.Active && len(s.EventTypes) == 1
		}},
		{"EmptyJobIDsMeansAllJobs", true, webhooks.SubscriptionUpdate{JobIDs: &[]int64{}}, func(s webhooks.Subscription) bool {
			return s.JobIDs != nil && len(s.JobIDs) == 0
		}},
		{"NewURLReactivates", false, webhooks.SubscriptionUpdate{ClientURL: ptr("https://new.example.com/")}, func(s webhooks.Subscription) bool {
			return s.Active && s.ClientURL == "https://new.example.com/"
		}},
		{"SameURLDoesNotReactivate", false, webhooks.SubscriptionUpdate{ClientURL: ptr("https://hooks.example.com/")}, func(s webhooks.Subscription) bool {
			return !s.Active
		}},
		{"ExplicitActiveWins", false, webhooks.SubscriptionUpdate{ClientURL: ptr("https://new.example.com/"), Active: ptr(false)}, func(s webhooks.Subscription) bool {
			return !s.Active
		}},
		{"Deactivate", true, webhooks.SubscriptionUpdate{Active: ptr(false)}, func(s webhooks.Subscription) bool { return !s.Active }},
		{"ReplaceEventTypes", true, webhooks.SubscriptionUpdate{EventTypes: &[]string{"job.run.errored", "job.run.started"}}, func(s webhooks.Subscription) bool {
			return len(s.EventTypes) == 2 && s.EventTypes[0] == "job.run.errored"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSubscription()
			s.Active = tt.active
			tt.update.Apply(&s)
			if !tt.check(s) {
				t.Fatalf("after Apply: %+v", s)
			}
		})
	}
}

func TestSubscriptionUpdateValidate(t *testing.T) {
	bad := map[string]webhooks.SubscriptionUpdate{
		"name":        {Name: ptr("")},
		"description": {Description: ptr(strings.Repeat("x", 1001))},
		"client_url":  {ClientURL: ptr("")},
		"event_types": {EventTypes: &[]string{}},
		"job_ids":     {JobIDs: &[]int64{1, 1}},
	}
	for field, u := range bad {
		err := u.Validate()
		if e, ok := err.(*webhooks.Error); !ok || e.Field != field {
			t.Errorf("%s: Validate() = %v, want error naming %s", field, err, field)
		}
	}
	ok := webhooks.SubscriptionUpdate{Name: ptr("x"), JobIDs: &[]int64{}, Active: ptr(false)}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid update: %v", err)
	}
}

// fieldsOf lists the field each problem names, in order.
func fieldsOf(p webhooks.Problems) []string {
	fields := make([]string, len(p))
	for i, e := range p {
		fields[i] = e.Field
	}
	return fields
}

func TestSubscriptionProblems_OnePerFieldInValidateOrder(t *testing.T) {
	s := webhooks.Subscription{Name: " ", Description: "\x00", EventTypes: []string{"x", "y"}, JobIDs: []int64{0, -1}}
	p := s.Problems()
	if got, want := strings.Join(fieldsOf(p), ","), "name,description,client_url,event_types,job_ids"; got != want {
		t.Fatalf("problem fields = %s, want %s", got, want)
	}
	if e, ok := s.Validate().(*webhooks.Error); !ok || *e != *p[0] {
		t.Fatalf("Validate() = %v, want the first problem %v", s.Validate(), p[0])
	}
	ok := validSubscription()
	if p := ok.Problems(); len(p) != 0 || p.Err() != nil {
		t.Fatalf("valid subscription: problems %v", p)
	}
}

func TestSubscriptionUpdateProblems_OnlyPresentFields(t *testing.T) {
	u := webhooks.SubscriptionUpdate{Name: ptr(""), EventTypes: &[]string{}, Active: ptr(true)}
	if got := strings.Join(fieldsOf(u.Problems()), ","); got != "name,event_types" {
		t.Fatalf("problem fields = %s, want name,event_types", got)
	}
	if e, ok := u.Validate().(*webhooks.Error); !ok || e.Field != "name" {
		t.Fatalf("Validate() = %v, want the name problem", u.Validate())
	}
}

func TestSubscriptionUpdateValidate_RefusesInvalidUTF8(t *testing.T) {
	tests := []struct {
		name   string
		update webhooks.SubscriptionUpdate
		field  string
	}{
		{"Name", webhooks.SubscriptionUpdate{Name: ptr("caf\xe9")}, "name"},
		{"Description", webhooks.SubscriptionUpdate{Description: ptr("\xff")}, "description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.update.Validate()
			if e, ok := err.(*webhooks.Error); !ok || e.Code != webhooks.EINVALID || e.Field != tt.field {
				t.Fatalf("Validate() = %v, want EINVALID naming %s", err, tt.field)
			}
		})
	}
}
