package deliveries

import (
	"net/http"
	"strconv"

	webhooks "github.com/jobhooks/jobhooks"
)

// SetSequenceHeader puts the delivery's number on an attempt's request
// (webhook-sequence); a delivery without one (a test) gets no header.
func (c Claimed) SetSequenceHeader(h http.Header) {
	if c.Sequence > 0 {
		h.Set(webhooks.HeaderSequence, strconv.FormatInt(c.Sequence, 10))
	}
}
