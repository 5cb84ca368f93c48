package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkListen_Relay measures a delivery's way through the relay to a
// local receiver on the dev server: listen long polls replica A, the
// worker POSTs to replica B.
//
//	go test -run '^$' -bench BenchmarkListen_Relay -benchtime 50x ./cmd/webhooks
//
// TestEndpoint: GET .../subscription/{id}/test until it answers with the
// local status (ns/op). JobRunEvent: from the ingestion's 202 to the local
// receiver (ms/delivery).
func BenchmarkListen_Relay(b *testing.B) {
	s := startListenStack(b)
	account, token := s.newAccount(b)
	local := startLocalReceiver(b, func(int) int { return http.StatusNoContent })
	l := s.startListen(b, s.apiA, token, account, "bench", local.url)

	b.Run("TestEndpoint", func(b *testing.B) {
		url := fmt.Sprintf("%s/api/v3/accounts/%d/webhooks/subscription/%s/test", s.apiA, account, l.webhookID)
		for b.Loop() {
			var res struct {
				VerificationStatusCode string `json:"verification_status_code"`
			}
			if code := s.call(b, http.MethodGet, url, token, nil, &res); code != http.StatusOK || res.VerificationStatusCode != "204" {
				b.Fatalf("test endpoint = %d %+v", code, res)
			}
			local.next(b)
		}
	})
	b.Run("JobRunEvent", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			sent := s.emit(b, account, 1)
			total += local.next(b).at.Sub(sent)
		}
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/delivery")
	})
}
