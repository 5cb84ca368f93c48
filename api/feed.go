package api

import (
	"strconv"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/feed"
)

// defaultFeedLimit is a feed page's size when the request names none.
const defaultFeedLimit = 100

// feedEntryJSON is one numbered delivery of a webhook's feed. Numbers are
// digit strings, as the spec writes its numbers; Body is the exact body as
// sent and Authorization the header a delivery of it carries.
type feedEntryJSON struct {
	Sequence      string `json:"sequence"`
	DeliveryID    string `json:"delivery_id"`
	EventID       string `json:"event_id"`
	EventType     string `json:"event_type"`
	Status        string `json:"status"`
	CreatedAt     string `json:"created_at"`
	Body          string `json:"body"`
	Authorization string `json:"authorization"`
}

type feedExtraJSON struct {
	NextAfter string `json:"next_after"`
}

// needsFeed answers 503 on the feed route of a server without one.
func (s *Server) needsFeed(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.feed == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "The delivery feed is not configured on this server."))
			return
		}
		h(c)
	}
}

// webhookFeed lists the webhook's numbered deliveries after ?after=N.
func (s *Server) webhookFeed(c *gin.Context) {
	m, id, err := s.webhookTarget(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	after, limit, err := feedWindow(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	page, err := s.feed.Read(c.Request.Context(), m.Account().ID, id, after, limit)
	if err != nil {
		s.writeError(c, err)
		return
	}
	data := make([]feedEntryJSON, len(page.Entries))
	for i, e := range page.Entries {
		data[i] = feedEntryJSON{
			Sequence: strconv.FormatInt(e.Sequence, 10), DeliveryID: e.ID, EventID: e.EventID, EventType: e.EventType,
			Status: e.Status, CreatedAt: MicrosString(e.CreatedAt), Body: string(e.Body), Authorization: e.Authorization,
		}
	}
	writeList(c, data, feedExtraJSON{NextAfter: strconv.FormatInt(page.NextAfter, 10)})
}

// feedWindow reads after (0 or more, default 0) and limit (1 to
// feed.MaxLimit, default defaultFeedLimit).
func feedWindow(c *gin.Context) (int64, int, error) {
	var after int64
	if v, ok := c.GetQuery("after"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, webhooks.FieldErrorf("after", "after must be an integer of 0 or more, got %q.", v)
		}
		after = n
	}
	limit := defaultFeedLimit
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > feed.MaxLimit {
			return 0, 0, webhooks.FieldErrorf("limit", "limit must be an integer from 1 to %d, got %q.", feed.MaxLimit, v)
		}
		limit = n
	}
	return after, limit, nil
}
