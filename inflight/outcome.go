package inflight

import (
	"net/http"
	"time"
)

// Class is what an attempt's answer says about its receiver's load.
type Class uint8

const (
	// NotSent: the attempt never went out (a fence or gate said no, the
	// worker stopped). It frees the slot and says nothing.
	NotSent Class = iota
	// Succeeded: a 2xx answer. Its latency is the gradient's signal.
	Succeeded
	// Rejected: the receiver answered that it is over capacity (429, 503,
	// and a gateway's 502 or 504). One decrease per generation of attempts,
	// as TCP treats a lost packet.
	Rejected
	// Unanswered: no answer at all (a timeout, a connection refused or
	// reset). The strongest signal: every one of a generation counts.
	Unanswered
	// Failed: any other answer (3xx, 4xx, 500), or a failure that has
	// nothing to do with load (a TLS refusal, the destination policy). It
	// frees the slot and moves no limit: a receiver that rejects our
	// payload is the breaker's business, not the limiter's.
	Failed
)

func (c Class) String() string {
	switch c {
	case NotSent:
		return "not_sent"
	case Succeeded:
		return "succeeded"
	case Rejected:
		return "rejected"
	case Unanswered:
		return "unanswered"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Outcome is how an attempt ended, as the limiter needs to know it.
type Outcome struct {
	Class Class
	// Latency is the attempt's: from sending to the answer (or to the
	// timeout). The attempt is taken to have ended at the permit's time
	// plus Latency, so Done reads no clock.
	Latency time.Duration
}

// ClassOfStatus classifies an HTTP answer's status code.
func ClassOfStatus(code int) Class {
	switch {
	case code >= 200 && code <= 299:
		return Succeeded
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable,
		code == http.StatusBadGateway, code == http.StatusGatewayTimeout:
		return Rejected
	}
	return Failed
}
