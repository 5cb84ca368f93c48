package api

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/jobhooks/jobhooks"
)

// subscriptionRequest is the body of create and update (spec 4.3, 4.4).
// Pointers tell absent (or null) fields from present ones; unknown fields,
// including "id", are ignored. Name and description are taken verbatim, so
// invalid UTF-8 in them is refused rather than replaced.
type subscriptionRequest struct {
	Name        *verbatimString `json:"name"`
	Description *verbatimString `json:"description"`
	ClientURL   *string         `json:"client_url"`
	EventTypes  *[]string       `json:"event_types"`
	JobIDs      *jobIDList      `json:"job_ids"`
	Active      *bool           `json:"active"`
}

// newSubscription turns a create request into a subscription, with the
// defaults of absent optional fields.
func (r *subscriptionRequest) newSubscription() webhooks.Subscription {
	sub := webhooks.Subscription{Active: true, EventTypes: []string{}, JobIDs: []int64{}}
	if r.Name != nil {
		sub.Name = string(*r.Name)
	}
	if r.Description != nil {
		sub.Description = string(*r.Description)
	}
	if r.ClientURL != nil {
		sub.ClientURL = *r.ClientURL
	}
	if r.EventTypes != nil {
		sub.EventTypes = *r.EventTypes
	}
	if r.JobIDs != nil {
		sub.JobIDs = *r.JobIDs
	}
	if r.Active != nil {
		sub.Active = *r.Active
	}
	return sub
}

// update turns an update request into the fields it replaces.
func (r *subscriptionRequest) update() webhooks.SubscriptionUpdate {
	u := webhooks.SubscriptionUpdate{
		Name: r.Name.stringPtr(), Description: r.Description.stringPtr(), ClientURL: r.ClientURL,
		EventTypes: r.EventTypes, Active: r.Active,
	}
	if r.JobIDs != nil {
		ids := []int64(*r.JobIDs)
		u.JobIDs = &ids
	}
	return u
}

// jobIDList decodes job_ids: job ids as JSON integers, or as strings of
// digits (what responses carry, so a client may send a response back).
type jobIDList []int64

func (l *jobIDList) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return webhooks.FieldErrorf("job_ids", "job_ids must be an array of job ids (integers).")
	}
	ids := make([]int64, 0, len(raw))
	for i, r := range raw {
		text := string(bytes.TrimSpace(r))
		if len(text) > 0 && text[0] == '"' {
			if err := json.Unmarshal(r, &text); err != nil || !isDigits(text) {
				return webhooks.FieldErrorf("job_ids", "job_ids[%d] must be a job id (a positive integer).", i)
			}
		} else if !isDigits(text) && !(len(text) > 1 && text[0] == '-' && isDigits(text[1:])) {
			return webhooks.FieldErrorf("job_ids", "job_ids[%d] must be a job id (a positive integer).", i)
		}
		id, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return webhooks.FieldErrorf("job_ids", "job_ids[%d] is not a valid job id.", i)
		}
		ids = append(ids, id)
	}
	*l = ids
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// subscriptionJSON is a subscription on the wire (spec 2.1): ids, job ids,
// status code and timestamps are strings.
type subscriptionJSON struct {
	HMACSecret        string   `json:"hmac_secret,omitempty"`
	ID                string   `json:"id"`
	AccountIdentifier string   `json:"account_identifier"`
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	JobIDs            []string `json:"job_ids"`
	EventTypes        []string `json:"event_types"`
	ClientURL         string   `json:"client_url"`
	Active            bool     `json:"active"`
	CreatedAt         string   `json:"created_at"`
	UpdatedAt         string   `json:"updated_at"`
	DispatchedAt      *string  `json:"dispatched_at,omitempty"`
	AccountID         string   `json:"account_id"`
	HTTPStatusCode    string   `json:"http_status_code"`
}

// toSubscriptionJSON renders s. dispatched_at appears only when
// withDispatchedAt (get and list, not create and update) and s was
// dispatched.
func toSubscriptionJSON(s webhooks.Subscription, withDispatchedAt bool) subscriptionJSON {
	jobIDs := make([]string, 0, len(s.JobIDs))
	for _, id := range s.JobIDs {
		jobIDs = append(jobIDs, strconv.FormatInt(id, 10))
	}
	eventTypes := s.EventTypes
	if eventTypes == nil {
		eventTypes = []string{}
	}
	out := subscriptionJSON{
		ID:                s.ID,
		AccountIdentifier: s.AccountIdentifier,
		Name:              s.Name,
		Description:       s.Description,
		JobIDs:            jobIDs,
		EventTypes:        eventTypes,
		ClientURL:         s.ClientURL,
		Active:            s.Active,
		CreatedAt:         MicrosString(s.CreatedAt),
		UpdatedAt:         MicrosString(s.UpdatedAt),
		AccountID:         strconv.FormatInt(s.AccountID, 10),
		HTTPStatusCode:    strconv.Itoa(s.HTTPStatusCode),
	}
	if withDispatchedAt && s.DispatchedAt != nil {
		d := MicrosString(*s.DispatchedAt)
		out.DispatchedAt = &d
	}
	return out
}

// deletedJSON is the data of a delete response.
type deletedJSON struct {
	ID string `json:"id"`
}

// listExtraJSON is "extra" of the list response (spec 4.1).
type listExtraJSON struct {
	Pagination paginationJSON `json:"pagination"`
	Filters    filtersJSON    `json:"filters"`
}

type paginationJSON struct {
	TotalCount int64 `json:"total_count"`
	Count      int   `json:"count"`
}

type filtersJSON struct {
	Offset int64 `json:"offset"`
	Limit  int32 `json:"limit"`
}
