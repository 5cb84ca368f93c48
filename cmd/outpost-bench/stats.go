package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method, or 0 for no values. ds is not changed.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p * float64(len(s)) / 100))
	rank = max(1, min(rank, len(s)))
	return s[rank-1]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
