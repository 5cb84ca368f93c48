package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/listeners"
)

// relay takes an attempt the worker POSTs to a listener's webhook
// (RELAY_BASE_URL/relay/v1/{token}), waits for the listener's answer and
// answers the worker with it: the local endpoint's status, body and the
// headers of listeners.AnswerHeaders (Content-Type, Retry-After, the
// Webhook-Delivery directive). Without one it answers 503 (nobody
// listens), 502 (the local endpoint could not be reached), 504 (no answer
// in time) or 429 (the account's listeners hold as many attempts as they
// may), so the attempt fails and is retried like any other; a request
// relayed already is a 409.
func (s *Server) relay(c *gin.Context) {
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			s.writeError(c, webhooks.Errorf(webhooks.ETOOLARGE, "Request body is larger than %d bytes.", maxErr.Limit))
			return
		}
		s.writeError(c, webhooks.Errorf(webhooks.EINVALID, "Could not read the request body."))
		return
	}
	res, err := s.listeners.Relay(c.Request.Context(), c.Param("token"), c.Request.Header, body)
	if err != nil {
		if c.Request.Context().Err() != nil {
			return // the worker gave up: nobody reads an answer
		}
		s.writeError(c, err)
		return
	}
	switch res.Outcome {
	case listeners.RelayAnswered:
		if res.Answer.Error != "" {
			s.writeError(c, webhooks.Errorf(webhooks.EBADGATEWAY, "The listening computer could not reach its local endpoint: %s", res.Answer.Error))
			return
		}
		for _, name := range listeners.AnswerHeaders() {
			if v := res.Answer.Header.Get(name); v != "" {
				c.Header(name, v)
			}
		}
		c.Status(res.Answer.StatusCode)
		_, _ = c.Writer.Write(res.Answer.Body)
	case listeners.RelayNoAnswer:
		s.writeError(c, webhooks.Errorf(webhooks.ETIMEOUT, "The listening computer did not answer within %s.", s.listeners.Hold()))
	default:
		s.writeError(c, webhooks.Errorf(webhooks.EUNAVAILABLE, "No webhooks listen is connected to this listener; the delivery will be retried."))
	}
}
