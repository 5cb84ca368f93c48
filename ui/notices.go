package ui

import (
	"fmt"
	"net/http"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/incidents"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// noticeWindow is how far back the webhooks list shows notices.
const noticeWindow = 7 * 24 * time.Hour

// noticesShown bounds the notices the webhooks list reads.
const noticesShown = 50

// noticeRow is one notice of the webhooks list.
type noticeRow struct {
	incidents.Notice
	Label, LabelClass string
	Sent              string // how sending it went, for people
}

var noticeLabels = map[string][2]string{
	webhooks.NoticeBreakerOpened: {"Deliveries on hold", "badge-bad"},
	webhooks.NoticeDisabled:      {"Deactivated automatically", "badge-bad"},
	webhooks.NoticeRecovered:     {"Recovered", "badge-ok"},
}

func newNoticeRow(n incidents.Notice) noticeRow {
	l, ok := noticeLabels[n.Kind]
	if !ok {
		l = [2]string{n.Kind, ""}
	}
	row := noticeRow{Notice: n, Label: l[0], LabelClass: l[1]}
	switch n.Status {
	case "delivered":
		row.Sent = "sent to your notification endpoint"
	case "no_endpoint":
		row.Sent = "not sent: no notification endpoint was set"
	case "failed":
		row.Sent = "your notification endpoint did not take it"
		if n.LastStatusCode != 0 {
			row.Sent += fmt.Sprintf(" (HTTP %d)", n.LastStatusCode)
		}
	default:
		row.Sent = "being sent"
	}
	return row
}

// incidentsView is what the webhooks list shows of the account's
// incidents: the webhooks whose breaker is open, and the notices of the
// last 7 days.
type incidentsView struct {
	OpenBreakers map[string]deliveries.OpenBreakerMark
	Notices      []noticeRow
}

// accountIncidents reads the webhooks list's incidents view, or nil when
// the UI has no incident use cases.
func (s *Server) accountIncidents(r *http.Request, a subscriptions.Access) (*incidentsView, error) {
	if s.incidents == nil {
		return nil, nil
	}
	open, err := s.incidents.OpenBreakers(r.Context(), a)
	if err != nil {
		return nil, err
	}
	list, err := s.incidents.Notices(r.Context(), a, noticesShown)
	if err != nil {
		return nil, err
	}
	v := &incidentsView{OpenBreakers: open}
	since := s.now().Add(-noticeWindow)
	for _, n := range list {
		if n.CreatedAt.Before(since) {
			break // newest first
		}
		v.Notices = append(v.Notices, newNoticeRow(n))
	}
	return v, nil
}
