package webhooks

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on subscription fields. The spec names none; these are ours and
// README lists them.
const (
	MaxSubscriptionNameLength        = 255  // characters
	MaxSubscriptionDescriptionLength = 1000 // characters
	MaxSubscriptionJobIDs            = 1000
)

// AttemptStateFreshFor bounds how old the state of a webhook an attempt is
// sent with may be (active, client_url, secret version): an attempt that
// would start later than this after its claim read the webhook reads it
// again, and does not start if it changed. A change that must stop or
// re-sign attempts (deactivation, deletion, a new client_url, a secret
// rotation) is answered this long after it committed, so no attempt that
// starts after the answer uses the state before it.
const AttemptStateFreshFor = 250 * time.Millisecond

// Subscription is a webhook subscription (spec 2.1): where to send which
// events of which jobs of one account.
type Subscription struct {
	ID                string // wsu_...
	AccountID         int64
	AccountIdentifier string // act_...
	Name              string
	Description       string
	ClientURL         string
	EventTypes        []string // in the order the client sent them
	JobIDs            []int64  // empty: every job of the account
	Active            bool
	HTTPStatusCode    int        // latest delivery status; 0 until the first dispatch
	DispatchedAt      *time.Time // nil until the first dispatch
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Validate checks the fields a client sets and returns the first problem.
// The client_url is only checked for presence here; its syntax and
// destination are netguard's business.
func (s *Subscription) Validate() error {
	return s.Problems().first()
}

// Problems returns every problem with the fields a client sets, at most one
// per field, in the order Validate checks them.
func (s *Subscription) Problems() Problems {
	var p Problems
	p.add(validateSubscriptionName(s.Name))
	p.add(validateSubscriptionDescription(s.Description))
	if s.ClientURL == "" {
		p.add(FieldErrorf("client_url", "client_url is required."))
	}
	p.add(validateEventTypes(s.EventTypes))
	p.add(validateJobIDs(s.JobIDs))
	return p
}

// SubscriptionUpdate is a PUT body: nil fields were absent and keep their
// stored value.
type SubscriptionUpdate struct {
	Name        *string
	Description *string
	ClientURL   *string
	EventTypes  *[]string
	JobIDs      *[]int64 // present and empty: every job
	Active      *bool
}

// Validate checks the fields that are present and returns the first
// problem.
func (u *SubscriptionUpdate) Validate() error {
	return u.Problems().first()
}

// Problems returns every problem with the fields that are present, at most
// one per field, in the order Validate checks them.
func (u *SubscriptionUpdate) Problems() Problems {
	var p Problems
	if u.Name != nil {
		p.add(validateSubscriptionName(*u.Name))
	}
	if u.Description != nil {
		p.add(validateSubscriptionDescription(*u.Description))
	}
	if u.ClientURL != nil && *u.ClientURL == "" {
		p.add(FieldErrorf("client_url", "client_url must not be empty."))
	}
	if u.EventTypes != nil {
		p.add(validateEventTypes(*u.EventTypes))
	}
	if u.JobIDs != nil {
		p.add(validateJobIDs(*u.JobIDs))
	}
	return p
}

// Apply replaces the fields present in u. Changing the client_url of an
// inactive subscription reactivates it (existing clients rely on this),
// unless the same update sets active explicitly.
func (u *SubscriptionUpdate) Apply(s *Subscription) {
	if u.Name != nil {
		s.Name = *u.Name
	}
	if u.Description != nil {
		s.Description = *u.Description
	}
	if u.ClientURL != nil && *u.ClientURL != s.ClientURL {
		s.ClientURL = *u.ClientURL
		if !s.Active && u.Active == nil {
			s.Active = true
		}
	}
	if u.EventTypes != nil {
		s.EventTypes = slices.Clone(*u.EventTypes)
	}
	if u.JobIDs != nil {
		s.JobIDs = slices.Clone(*u.JobIDs)
	}
	if u.Active != nil {
		s.Active = *u.Active
	}
}

func validateSubscriptionName(name string) *Error {
	if !utf8.ValidString(name) {
		return FieldErrorf("name", "name must be valid UTF-8 text.")
	}
	if strings.TrimSpace(name) == "" {
		return FieldErrorf("name", "name is required and must not be blank.")
	}
	if n := utf8.RuneCountInString(name); n > MaxSubscriptionNameLength {
		return FieldErrorf("name", "name must be at most %d characters, got %d.", MaxSubscriptionNameLength, n)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return FieldErrorf("name", "name must not contain control characters.")
	}
	return nil
}

func validateSubscriptionDescription(d string) *Error {
	if !utf8.ValidString(d) {
		return FieldErrorf("description", "description must be valid UTF-8 text.")
	}
	if n := utf8.RuneCountInString(d); n > MaxSubscriptionDescriptionLength {
		return FieldErrorf("description", "description must be at most %d characters, got %d.", MaxSubscriptionDescriptionLength, n)
	}
	bad := func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }
	if strings.IndexFunc(d, bad) >= 0 {
		return FieldErrorf("description", "description must not contain control characters other than tab and line breaks.")
	}
	return nil
}

func validateEventTypes(types []string) *Error {
	allowed := strings.Join(EventTypes, ", ")
	if len(types) == 0 {
		return FieldErrorf("event_types", "event_types is required: a non-empty list of %s.", allowed)
	}
	for i, t := range types {
		if !slices.Contains(EventTypes, t) {
			return FieldErrorf("event_types", "event_types[%d] %q is not an event type; allowed values are %s.", i, t, allowed)
		}
		if slices.Index(types, t) != i {
			return FieldErrorf("event_types", "event_types lists %q more than once.", t)
		}
	}
	return nil
}

func validateJobIDs(ids []int64) *Error {
	if len(ids) > MaxSubscriptionJobIDs {
		return FieldErrorf("job_ids", "job_ids may list at most %d jobs, got %d.", MaxSubscriptionJobIDs, len(ids))
	}
	seen := make(map[int64]bool, len(ids))
	for i, id := range ids {
		if id <= 0 {
			return FieldErrorf("job_ids", "job_ids[%d] must be a positive integer, got %d.", i, id)
		}
		if seen[id] {
			return FieldErrorf("job_ids", "job_ids lists %d more than once.", id)
		}
		seen[id] = true
	}
	return nil
}
