package api

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks/incidents"
)

// noticeJSON is a notice an account got about one of its webhooks, and
// how sending it went.
type noticeJSON struct {
	ID                string `json:"id"`
	WebhookID         string `json:"webhook_id"`
	WebhookName       string `json:"webhook_name"`
	Type              string `json:"type"`
	IncidentStartedAt string `json:"incident_started_at"`
	Status            string `json:"status"`
	AttemptCount      int    `json:"attempt_count"`
	LastStatusCode    string `json:"last_status_code"`
	LastError         string `json:"last_error"`
	CreatedAt         string `json:"created_at"`
	UpdatedAt         string `json:"updated_at"`
}

func toNoticeJSON(n incidents.Notice) noticeJSON {
	return noticeJSON{
		ID: n.ID, WebhookID: n.SubscriptionID, WebhookName: n.WebhookName, Type: n.Kind,
		IncidentStartedAt: MicrosString(n.IncidentStartedAt), Status: n.Status, AttemptCount: n.AttemptCount,
		LastStatusCode: strconv.Itoa(n.LastStatusCode), LastError: n.LastError,
		CreatedAt: MicrosString(n.CreatedAt), UpdatedAt: MicrosString(n.UpdatedAt),
	}
}

type noticeFiltersJSON struct {
	Limit int32 `json:"limit"`
}

// listNotices answers GET .../webhooks/notices (read permission): the
// account's latest notices, newest first.
func (s *Server) listNotices(c *gin.Context) {
	a, err := s.webhookAccess(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	limit, err := listLimit(c, incidents.DefaultNotices)
	if err != nil {
		s.writeError(c, err)
		return
	}
	list, err := s.incidents.Notices(c.Request.Context(), a, int(limit))
	if err != nil {
		s.writeError(c, err)
		return
	}
	data := make([]noticeJSON, 0, len(list))
	for _, n := range list {
		data = append(data, toNoticeJSON(n))
	}
	writeList(c, data, gin.H{"filters": noticeFiltersJSON{Limit: limit}})
}
