package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/jobhooks/jobhooks"
)

// directBaseline POSTs the same number of signed payloads straight to the
// receiver: what delivery costs without orchestration.
func (b *bench) directBaseline(ctx context.Context, n int) (time.Duration, []time.Duration, float64, error) {
	done := b.recv.expect(n)
	subIDs := make([]string, 0, len(b.secrets))
	for id := range b.secrets {
		subIDs = append(subIDs, id)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.o.concurrency}}
	cpu0, _ := cpuSeconds(os.Getpid())
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.o.concurrency)
	start := time.Now()
	for i := range n {
		sub := subIDs[i%len(subIDs)]
		eventID := webhooks.NewID(webhooks.EventIDPrefix)
		g.Go(func() error {
			now := time.Now()
			b.recv.ingested(eventID, now)
			payload, err := webhooks.BuildPayload(webhooks.PayloadEnvelope{AccountID: b.account, SubscriptionID: sub, EventID: eventID,
				Timestamp: now, EventType: webhooks.EventRunCompleted, WebhookName: "bench", ToolName: "dbt",
				Data: webhooks.RunData{JobID: "1", RunID: strconv.Itoa(i), RunStatus: "Success", RunStatusCode: 10}})
			if err != nil {
				return err
			}
			req, _ := http.NewRequestWithContext(gctx, http.MethodPost, b.recv.url, bytes.NewReader(payload))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", webhooks.Sign(b.secrets[sub], payload))
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, nil, 0, err
	}
	<-done
	elapsed := time.Since(start)
	cpu1, _ := cpuSeconds(os.Getpid())
	lat, _ := b.recv.results()
	return elapsed, lat, cpu1 - cpu0, nil
}
