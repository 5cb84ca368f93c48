package ui

import (
	"net/http"
	"strings"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// deliverySearchShown is how many deliveries a search lists.
const deliverySearchShown = 20

// deliverySearchView is the search box of the webhooks page and, after a
// search, what it found.
type deliverySearchView struct {
	Query     string
	Searched  bool
	MatchedAs string // "event id", "job id" or "run id"; "" when nothing matched
	Items     []searchRow
	Total     int64
}

// searchRow is a delivery found by the search, with the name of the
// webhook it went to.
type searchRow struct {
	deliveryRow
	WebhookName string // "" when the webhook was deleted meanwhile
}

// searchDeliveries runs the ?q= search of the webhooks page: the text is
// tried as an event id, then a job id, then a run id, and the first that
// matches anything is shown. Nil when the UI has no delivery engine.
func (s *Server) searchDeliveries(r *http.Request, a subscriptions.Access) (*deliverySearchView, error) {
	if s.reads == nil {
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
		list, total, err := s.reads.SearchDeliveries(r.Context(), a, try.f)
		if err != nil {
			return nil, err
		}
		if total == 0 {
			continue
		}
		v.MatchedAs, v.Total = try.as, total
		names := make(map[string]string)
		for _, d := range list {
			name, seen := names[d.SubscriptionID]
			if !seen {
				// A page names few webhooks: one lookup each, by the same
				// rules as the webhook's own page.
				sub, err := s.subscriptions.Get(r.Context(), a, d.SubscriptionID)
				if err != nil && webhooks.ErrorCode(err) != webhooks.ENOTFOUND {
					return nil, err
				}
				name, names[d.SubscriptionID] = sub.Name, sub.Name
			}
			v.Items = append(v.Items, searchRow{deliveryRow: deliveryRow{Delivery: d}, WebhookName: name})
		}
		return v, nil
	}
	return v, nil
}
