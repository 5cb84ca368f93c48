package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	webhooks "github.com/jobhooks/jobhooks"
)

// needsDeliveries answers 503 on a route that needs the delivery service or
// its reads when the server has none (a deployment or test without
// delivery; NewServer has both or neither).
func (s *Server) needsDeliveries(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.deliveries == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Delivery is not configured on this server."))
			return
		}
		h(c)
	}
}

// needsIncidents answers 503 on a route that needs the incident use cases
// when the server has none.
func (s *Server) needsIncidents(h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.incidents == nil {
			s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "Breakers and notices are not configured on this server."))
			return
		}
		h(c)
	}
}

// routes lists the whole API surface. Paths are written without a trailing
// slash; trimTrailingSlash makes both forms work.
func (s *Server) routes(r *gin.Engine) {
	r.NoRoute(s.notFound)
	r.NoMethod(s.methodNotAllowed)

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)

	v2 := r.Group("/api/v2", s.authenticate())
	v2.GET("/accounts", s.listAccounts)
	v2.GET("/accounts/:account_id", s.getAccount)
	v2.POST("/users/:user_id/apikey", s.rotateAPIKey)

	r.GET("/api/openapi.json", s.openAPIDocument)

	v3 := r.Group("/api/v3/accounts/:account_id/webhooks", s.authenticate())
	v3.GET("/subscriptions", s.listSubscriptions)
	v3.POST("/subscriptions", s.createSubscription)
	v3.GET("/subscription/:webhook_id", s.getSubscription)
	v3.PUT("/subscription/:webhook_id", s.updateSubscription)
	v3.DELETE("/subscription/:webhook_id", s.deleteSubscription)
	v3.POST("/subscription/:webhook_id/secret/rotate", s.rotateSecret)
	v3.GET("/subscription/:webhook_id/delivery-settings", s.needsDeliverySettings(s.getDeliverySettings))
	v3.PUT("/subscription/:webhook_id/delivery-settings", s.needsDeliverySettings(s.putDeliverySettings))
	v3.GET("/subscription/:webhook_id/health", s.needsDeliveries(s.webhookHealth))
	v3.POST("/subscription/:webhook_id/deliveries/replay", s.needsDeliveries(s.replayDeliveries))
	v3.GET("/subscription/:webhook_id/replays/:replay_id", s.needsDeliveries(s.getReplay))
	v3.POST("/subscription/:webhook_id/replays/:replay_id/cancel", s.needsDeliveries(s.cancelReplay))
	v3.GET("/subscription/:webhook_id/test", s.needsDeliveries(s.testWebhook))
	v3.GET("/subscription/:webhook_id/breaker", s.needsIncidents(s.getBreaker))
	v3.POST("/subscription/:webhook_id/breaker/probe", s.needsIncidents(s.probeBreaker))
	v3.GET("/notification-endpoint", s.needsIncidents(s.getNotificationEndpoint))
	v3.PUT("/notification-endpoint", s.needsIncidents(s.putNotificationEndpoint))
	v3.DELETE("/notification-endpoint", s.needsIncidents(s.deleteNotificationEndpoint))
	v3.POST("/notification-endpoint/secret/rotate", s.needsIncidents(s.rotateNotificationSecret))
	v3.GET("/notices", s.needsIncidents(s.listNotices))
	v3.GET("/signing-keys", s.needsSigningKeys(s.getSigningKeys))
	v3.POST("/signing-keys/rotate", s.needsSigningKeys(s.rotateSigningKey))
	v3.GET("/deliveries", s.needsDeliveries(s.searchDeliveries))
	v3.GET("/subscription/:webhook_id/deliveries", s.needsDeliveries(s.listDeliveries))
	v3.GET("/subscription/:webhook_id/deliveries/:delivery_id", s.needsDeliveries(s.getDelivery))
	v3.GET("/subscription/:webhook_id/feed", s.needsFeed(s.webhookFeed))
	v3.POST("/subscription/:webhook_id/deliveries/:delivery_id/retry", s.needsDeliveries(s.retryDelivery))
	v3.POST("/listeners", s.needsListeners(s.openListener))
	v3.GET("/listeners/:listener_id/attempts/next", s.needsListeners(s.nextListenerAttempt))
	v3.POST("/listeners/:listener_id/attempts/:attempt_id/answer", s.needsListeners(s.answerListenerAttempt))

	// The accounts' public signing keys, for receivers: no credential.
	r.GET("/.well-known/webhooks/:account_id/jwks.json", s.needsSigningKeys(s.jwks))

	// The listener relay: workers POST listeners' deliveries here. It takes
	// no API credential; each request's signature is verified instead.
	r.POST("/relay/v1/:token", s.needsListeners(s.relay))

	internal := r.Group("/internal/v1", s.authenticateInternal())
	internal.POST("/job-run-events", s.needsDeliveries(s.ingestJobRunEvent))
	internal.POST("/job-run-events/batch", s.needsDeliveries(s.ingestJobRunEvents))

	// The web UI routes its own pages (ui.Server.routes).
	if s.ui != nil {
		ui := gin.WrapH(s.ui)
		r.Any("/ui", ui)
		r.Any("/ui/*page", ui)
		r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusSeeOther, "/ui") })
	}
}
