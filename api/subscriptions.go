package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/subscriptions"
)

// Paging of the subscription list (spec 4.1 shows the defaults).
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

// webhookAccess checks the caller's access to the path's account: reading
// (write false) or changing (write true) its webhooks.
func (s *Server) webhookAccess(c *gin.Context, write bool) (subscriptions.Access, error) {
	return s.subscriptions.Authorize(principal(c), c.Param("account_id"), write)
}

// webhookTarget checks the caller's access (read or write) to the account
// and returns it with the :webhook_id path parameter, which must have the
// shape of a subscription id (else not found, before any body is read).
func (s *Server) webhookTarget(c *gin.Context, write bool) (subscriptions.Access, string, error) {
	a, err := s.webhookAccess(c, write)
	if err != nil {
		return subscriptions.Access{}, "", err
	}
	id := c.Param("webhook_id")
	if err := subscriptions.CheckID(id); err != nil {
		return subscriptions.Access{}, "", err
	}
	return a, id, nil
}

func (s *Server) listSubscriptions(c *gin.Context) {
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
	page, err := s.subscriptions.List(c.Request.Context(), a, limit, offset)
	if err != nil {
		s.writeError(c, err)
		return
	}
	out := make([]subscriptionJSON, 0, len(page.Subscriptions))
	for _, sub := range page.Subscriptions {
		out = append(out, toSubscriptionJSON(sub, true))
	}
	writeList(c, out, listExtraJSON{
		Pagination: paginationJSON{TotalCount: page.Total, Count: len(out)},
		Filters:    filtersJSON{Offset: offset, Limit: limit},
	})
}

// listWindow reads the limit (1 to 100, default 10) and offset (0 or more,
// default 0) query parameters.
func listWindow(c *gin.Context) (int32, int64, error) {
	limit, err := listLimit(c, defaultListLimit)
	if err != nil {
		return 0, 0, err
	}
	var offset int64
	if v, ok := c.GetQuery("offset"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, webhooks.FieldErrorf("offset", "offset must be an integer of 0 or more, got %q.", v)
		}
		offset = n
	}
	return limit, offset, nil
}

// listLimit reads the limit query parameter: 1 to 100, default def.
func listLimit(c *gin.Context, def int32) (int32, error) {
	v, ok := c.GetQuery("limit")
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > maxListLimit {
		return 0, webhooks.FieldErrorf("limit", "limit must be an integer from 1 to %d, got %q.", maxListLimit, v)
	}
	return int32(n), nil
}

func (s *Server) getSubscription(c *gin.Context) {
	a, err := s.webhookAccess(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	sub, err := s.subscriptions.Get(c.Request.Context(), a, c.Param("webhook_id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toSubscriptionJSON(sub, true))
}

func (s *Server) createSubscription(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req subscriptionRequest
	if err := decodeJSON(c, &req, ignoreUnknown); err != nil {
		s.writeError(c, err)
		return
	}
	created, secret, err := s.subscriptions.Create(c.Request.Context(), a, req.newSubscription())
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook subscription created",
		"account_id", a.Account().ID, "subscription_id", created.ID, "active", created.Active)
	out := toSubscriptionJSON(created, false)
	out.HMACSecret = secret
	c.Header("Cache-Control", "no-store")
	writeData(c, http.StatusCreated, out)
}

func (s *Server) updateSubscription(c *gin.Context) {
	a, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req subscriptionRequest
	if err := decodeJSON(c, &req, ignoreUnknown); err != nil {
		s.writeError(c, err)
		return
	}
	updated, err := s.subscriptions.Update(c.Request.Context(), a, id, req.update())
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook subscription updated",
		"account_id", a.Account().ID, "subscription_id", id, "active", updated.Active)
	writeData(c, http.StatusOK, toSubscriptionJSON(updated, false))
}

func (s *Server) deleteSubscription(c *gin.Context) {
	a, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.subscriptions.Delete(c.Request.Context(), a, id); err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "webhook subscription deleted",
		"account_id", a.Account().ID, "subscription_id", id)
	writeData(c, http.StatusOK, deletedJSON{ID: id})
}
