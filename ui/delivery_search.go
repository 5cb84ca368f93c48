package ui

import (
	"net/http"
	"strings"

	"github.com/jobhooks/jobhooks/deliveries"
)

// deliverySearchShown is how many deliveries a search lists.
const deliverySearchShown = 20

// deliverySearchView is the search box of the webhooks page and, after a
// search, what it found.
type deliverySearchView struct {
	Query     string
	Searched  bool
	MatchedAs string // "event id", "job id" or "run id"; "" when nothing matched
	Items     []deliveryRow
	Total     int64
}

// searchDeliveries runs the ?q= search of the webhooks page: the text is
// tried as an event id, then a job id, then a run id, and the first that
// matches anything is shown. Nil when the UI has no delivery engine.
func (s *Server) searchDeliveries(r *http.Request, accountID int64) (*deliverySearchView, error) {
	if s.deliveries == nil {
		return nil, nil
	}
	v := &deliverySearchView{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	if v.Query == "" {
		return v, nil
	}
	v.Searched = true
	for _, try := range []struct {
		as string
		f  deliveries.SearchFilter
	}{
		{"event id", deliveries.SearchFilter{EventID: v.Query}},
		{"job id", deliveries.SearchFilter{JobID: v.Query}},
		{"run id", deliveries.SearchFilter{RunID: v.Query}},
	} {
		try.f.Limit = deliverySearchShown
		list, total, err := s.deliveries.Store().SearchDeliveries(r.Context(), accountID, try.f)
		if err != nil {
			return nil, err
		}
		if total == 0 {
			continue
		}
		v.MatchedAs, v.Total = try.as, total
		for _, d := range list {
			v.Items = append(v.Items, deliveryRow{Delivery: d})
		}
		return v, nil
	}
	return v, nil
}
