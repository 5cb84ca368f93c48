package api

import (
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
)

// searchFiltersJSON is extra.filters of the delivery search: the per-webhook
// list's, plus the search's own. A filter not given is null.
type searchFiltersJSON struct {
	deliveryFiltersJSON
	EventID   *string `json:"event_id"`
	JobID     *string `json:"job_id"`
	RunID     *string `json:"run_id"`
	EventType *string `json:"event_type"`
	Since     *string `json:"since"`
	Until     *string `json:"until"`
}

// maxSearchKeyLength bounds event_id, job_id and run_id: longer values
// match nothing that was stored, and are refused rather than sent.
const maxSearchKeyLength = 255

// searchDeliveries lists the account's deliveries across its live webhooks,
// newest first, with the per-webhook list's paging and envelope.
func (s *Server) searchDeliveries(c *gin.Context) {
	a, err := s.webhookAccess(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	limit, offset, err := listWindow(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	f, filters, err := searchFilter(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	f.Limit, f.Offset = int(limit), int(min(offset, math.MaxInt32))
	filters.Offset, filters.Limit = offset, limit
	list, total, err := s.deliveryReads.SearchDeliveries(c.Request.Context(), a, f)
	if err != nil {
		s.writeError(c, err)
		return
	}
	data := make([]deliveryJSON, 0, len(list))
	for _, d := range list {
		data = append(data, toDeliveryJSON(d))
	}
	writeList(c, data, gin.H{
		"pagination": paginationJSON{TotalCount: total, Count: len(data)},
		"filters":    filters,
	})
}

// searchFilter reads the search's query parameters; an empty one is absent.
func searchFilter(c *gin.Context) (deliveries.SearchFilter, searchFiltersJSON, error) {
	var f deliveries.SearchFilter
	var out searchFiltersJSON
	for _, k := range []struct {
		name string
		dst  *string
		echo **string
	}{{"event_id", &f.EventID, &out.EventID}, {"job_id", &f.JobID, &out.JobID}, {"run_id", &f.RunID, &out.RunID}} {
		v := c.Query(k.name)
		if v == "" {
			continue
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) || utf8.RuneCountInString(v) > maxSearchKeyLength {
			return f, out, webhooks.FieldErrorf(k.name, "%s must be text of at most %d characters.", k.name, maxSearchKeyLength)
		}
		*k.dst, *k.echo = v, &v
	}
	if v := c.Query("status"); v != "" {
		if !slices.Contains(deliveries.Statuses, v) {
			return f, out, webhooks.FieldErrorf("status", "status must be one of %s, got %q.", strings.Join(deliveries.Statuses, ", "), v)
		}
		f.Status, out.Status = v, &v
	}
	if v := c.Query("event_type"); v != "" {
		if !slices.Contains(webhooks.EventTypes, v) {
			return f, out, webhooks.FieldErrorf("event_type", "event_type must be one of %s, got %q.", strings.Join(webhooks.EventTypes, ", "), v)
		}
		f.EventType, out.EventType = v, &v
	}
	for _, k := range []struct {
		name string
		dst  **time.Time
		echo **string
	}{{"since", &f.Since, &out.Since}, {"until", &f.Until, &out.Until}} {
		v := c.Query(k.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return f, out, webhooks.FieldErrorf(k.name, "%s must be an RFC 3339 time such as 2026-11-20T08:00:00Z, got %q.", k.name, v)
		}
		*k.dst, *k.echo = &t, &v
	}
	return f, out, nil
}
