package api

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/jobhooks/jobhooks"
)

// testResultJSON is the data of spec 4.5.
type testResultJSON struct {
	VerificationError      *string `json:"verification_error"`
	VerificationStatusCode string  `json:"verification_status_code"`
	DeliveryID             string  `json:"delivery_id"`
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
	out := testResultJSON{VerificationStatusCode: strconv.Itoa(res.StatusCode), DeliveryID: res.DeliveryID}
	if res.Error != "" {
		out.VerificationError = &res.Error
	}
	writeData(c, http.StatusOK, out)
}
