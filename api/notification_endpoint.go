package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/incidents"
)

// notificationEndpointJSON is the account's notification endpoint; its
// secret is only in the answer that made it (notificationSecretJSON).
type notificationEndpointJSON struct {
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// notificationSecretJSON is the endpoint with its new signing secret,
// shown this once.
type notificationSecretJSON struct {
	notificationEndpointJSON
	Secret                 string `json:"secret"`
	StandardWebhooksSecret string `json:"standard_webhooks_secret"`
}

type notificationEndpointRequest struct {
	URL *string `json:"url"`
}

func toNotificationEndpointJSON(e incidents.NotificationEndpoint) notificationEndpointJSON {
	return notificationEndpointJSON{URL: e.URL, CreatedAt: MicrosString(e.CreatedAt), UpdatedAt: MicrosString(e.UpdatedAt)}
}

func (s *Server) getNotificationEndpoint(c *gin.Context) {
	a, err := s.webhookAccess(c, false)
	if err != nil {
		s.writeError(c, err)
		return
	}
	e, err := s.incidents.NotificationEndpoint(c.Request.Context(), a)
	if err != nil {
		s.writeError(c, err)
		return
	}
	writeData(c, http.StatusOK, toNotificationEndpointJSON(e))
}

// putNotificationEndpoint sets the URL: 201 with the new signing secret
// when it makes the endpoint, 200 without it when it changes the URL.
func (s *Server) putNotificationEndpoint(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	var req notificationEndpointRequest
	if err := decodeJSON(c, &req); err != nil {
		s.writeError(c, err)
		return
	}
	if req.URL == nil {
		s.writeError(c, webhooks.FieldErrorf("url", "url is required."))
		return
	}
	e, secret, err := s.incidents.PutNotificationEndpoint(c.Request.Context(), a, *req.URL)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "notification endpoint set",
		"account_id", a.Account().ID, "created", secret != "")
	c.Header("Cache-Control", "no-store")
	if secret == "" {
		writeData(c, http.StatusOK, toNotificationEndpointJSON(e))
		return
	}
	writeData(c, http.StatusCreated, notificationSecretJSON{notificationEndpointJSON: toNotificationEndpointJSON(e),
		Secret: secret, StandardWebhooksSecret: webhooks.StandardWebhooksSecret(secret)})
}

// rotateNotificationSecret gives the endpoint a new signing secret, shown
// this once; the previous one stops signing at once.
func (s *Server) rotateNotificationSecret(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	e, secret, err := s.incidents.RotateNotificationSecret(c.Request.Context(), a)
	if err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "notification endpoint secret rotated", "account_id", a.Account().ID)
	c.Header("Cache-Control", "no-store")
	writeData(c, http.StatusOK, notificationSecretJSON{notificationEndpointJSON: toNotificationEndpointJSON(e),
		Secret: secret, StandardWebhooksSecret: webhooks.StandardWebhooksSecret(secret)})
}

type notificationEndpointDeletedJSON struct {
	Deleted bool `json:"deleted"`
}

func (s *Server) deleteNotificationEndpoint(c *gin.Context) {
	a, err := s.webhookAccess(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.incidents.DeleteNotificationEndpoint(c.Request.Context(), a); err != nil {
		s.writeError(c, err)
		return
	}
	s.logger.InfoContext(c.Request.Context(), "notification endpoint deleted", "account_id", a.Account().ID)
	writeData(c, http.StatusOK, notificationEndpointDeletedJSON{Deleted: true})
}
