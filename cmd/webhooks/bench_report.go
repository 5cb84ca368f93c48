package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"
)

func discardSlog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// run measures the Temporal-backed delivery, then the direct baseline, and
// prints both.
func (b *bench) run(ctx context.Context) error {
	w := b.env.stdout
	total := b.o.events * b.o.subs
	rate := "as fast as possible"
	if b.o.rate > 0 {
		rate = fmt.Sprintf("%.0f deliveries/s", b.o.rate)
	}
	fmt.Fprintf(w, "bench: %d events x %d webhooks = %d deliveries, ingestion concurrency %d, rate %s, temporal %s %v\n",
		b.o.events, b.o.subs, total, b.o.concurrency, rate, map[bool]string{true: "in memory", false: "sqlite file"}[b.o.inMemory], b.o.temporalArgs)

	procs := []*benchProc{b.api, b.temporal}
	if b.worker != nil {
		procs = []*benchProc{b.api, b.worker, b.temporal}
	} else {
		b.api.name = "api+wkr"
	}
	for _, p := range procs {
		p.markCPU()
	}
	start := time.Now()
	lat, err := b.phase(ctx, b.o.events, b.o.rate)
	if err != nil {
		return err
	}
	_, span := b.recv.results()
	elapsed := time.Since(start)
	if span <= 0 {
		span = elapsed
	}
	fmt.Fprintf(w, "temporal: %d deliveries in %.2fs = %.1f deliveries/s\n", len(lat), span.Seconds(), float64(len(lat))/span.Seconds())
	if n := b.retries.Load(); n > 0 {
		fmt.Fprintf(w, "  ingestion 503s retried: %d\n", n)
	}
	fmt.Fprintf(w, "  ingest-to-arrival: p50 %s  p95 %s  p99 %s  max %s\n",
		ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 99)), ms(percentile(lat, 100)))
	var cpuTotal float64
	for _, p := range procs {
		c := p.cpuSince()
		cpuTotal += c
		fmt.Fprintf(w, "  %-8s CPU %.2fs = %.2f ms/delivery, peak RSS %.0f MiB\n", p.name, c, 1000*c/float64(total), peakRSSMiB(p.pid()))
	}
	fmt.Fprintf(w, "  all      CPU %.2fs = %.2f ms/delivery\n", cpuTotal, 1000*cpuTotal/float64(total))

	if !b.o.baseline {
		return nil
	}
	dur, blat, bcpu, err := b.directBaseline(ctx, total)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	direct := float64(total) / dur.Seconds()
	fmt.Fprintf(w, "baseline (direct signed POSTs, no Temporal): %d in %.2fs = %.1f deliveries/s, send-to-arrival p50 %s p99 %s, CPU %.2f ms/delivery (sender+receiver)\n",
		total, dur.Seconds(), direct, ms(percentile(blat, 50)), ms(percentile(blat, 99)), 1000*bcpu/float64(total))
	fmt.Fprintf(w, "orchestration cost: %.1fx the time, %.1fx the CPU per delivery\n",
		direct/(float64(len(lat))/span.Seconds()), cpuTotal/max(bcpu, 1e-9))
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d.Microseconds())/1000) }
