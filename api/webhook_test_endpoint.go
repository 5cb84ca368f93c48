package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
)

// testResultJSON is the data of spec 4.5, exactly.
type testResultJSON struct {
	VerificationError      *string `json:"verification_error"`
	VerificationStatusCode string  `json:"verification_status_code"`
}

// newTestResultJSON renders what the endpoint answered: its status code
// ("0" for no HTTP response) and why it failed (nil when it answered 2xx).
func newTestResultJSON(statusCode int, failure string) testResultJSON {
	out := testResultJSON{VerificationStatusCode: strconv.Itoa(statusCode)}
	if failure != "" {
		out.VerificationError = &failure
	}
	return out
}

// testWebhook sends one signed test delivery now, through the delivery
// workflow (single attempt), and reports what the endpoint answered.
func (s *Server) testWebhook(c *gin.Context) {
	m, id, err := s.webhookTarget(c, true)
	if err != nil {
		s.writeError(c, err)
		return
	}
	res, err := s.deliveries.Test(c.Request.Context(), m.Account().ID, id)
	if err != nil {
		if webhooks.ErrorCode(err) == webhooks.EUNAVAILABLE {
			s.logger.ErrorContext(c.Request.Context(), "test delivery", "webhook_id", id, "error", err.Error())
		}
		s.writeError(c, err)
		return
	}
	// The test delivery's id (its entry in Recent Deliveries): spec 4.5's
	// data has exactly two fields, so the id goes in the header that
	// carries it on the delivery itself.
	c.Header(webhooks.HeaderDeliveryID, res.DeliveryID)
	writeData(c, http.StatusOK, newTestResultJSON(res.StatusCode, res.Error))
}
