package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // 100 ms down to 1 ms
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{name: "Empty", in: nil, p: 50, want: 0},
		{name: "One", in: []time.Duration{7}, p: 99, want: 7},
		{name: "MedianOfUnsorted", in: []time.Duration{5, 1, 3}, p: 50, want: 3},
		{name: "MedianOfEvenIsLowerMiddle", in: []time.Duration{4, 1, 3, 2}, p: 50, want: 2},
		{name: "P99OfHundred", in: hundred, p: 99, want: 99 * time.Millisecond},
		{name: "P50OfHundred", in: hundred, p: 50, want: 50 * time.Millisecond},
		{name: "P100IsMax", in: hundred, p: 100, want: 100 * time.Millisecond},
		{name: "TinyPIsMin", in: hundred, p: 0.001, want: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestPercentile_LeavesInputUnsorted(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	percentile(in, 50)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("percentile sorted its input: %v", in)
	}
}
