package inflight_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jobhooks/jobhooks/inflight"
)

// BenchmarkTryAcquireDone is the hot path: one permit taken and given back
// with a success, over 1,000 webhooks on 100 destinations.
func BenchmarkTryAcquireDone(b *testing.B) {
	l := inflight.New(inflight.Options{})
	targets := make([]inflight.Target, 1000)
	for i := range targets {
		targets[i] = inflight.Target{Webhook: "wh_" + strconv.Itoa(i), Destination: "https://d" + strconv.Itoa(i%100) + ":443"}
	}
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now = now.Add(time.Microsecond)
		p, ok := l.TryAcquire(targets[i%len(targets)], now)
		if !ok {
			b.Fatal("no permit")
		}
		p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: 100 * time.Millisecond})
	}
}

// BenchmarkTryAcquireDoneParallel: the same from every P at once (the
// executor's pool records outcomes from many goroutines).
func BenchmarkTryAcquireDoneParallel(b *testing.B) {
	l := inflight.New(inflight.Options{})
	targets := make([]inflight.Target, 1000)
	for i := range targets {
		targets[i] = inflight.Target{Webhook: "wh_" + strconv.Itoa(i), Destination: "https://d" + strconv.Itoa(i%100) + ":443"}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			p, ok := l.TryAcquire(targets[i%len(targets)], t0)
			if ok {
				p.Done(inflight.Outcome{Class: inflight.Succeeded, Latency: 100 * time.Millisecond})
			}
		}
	})
}
