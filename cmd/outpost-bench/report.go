package main

import (
	"fmt"
	"io"
	"strings"
)

// printFigures writes a phase's Go benchmark line and, below it, what the
// receiver saw in words.
func printFigures(w io.Writer, shape, receiver string, f figures) {
	var b strings.Builder
	fmt.Fprintf(&b, "BenchmarkOutpost/shape=%s/receiver=%s 1 %d ns/op", shape, receiver, max(0, f.elapsed.Nanoseconds()))
	if f.elapsed > 0 {
		fmt.Fprintf(&b, " %.1f deliveries/s", float64(f.arrived)/f.elapsed.Seconds())
	}
	fmt.Fprintf(&b, " %.3f box-cpu-ms/delivery %.3f stack-cpu-ms/delivery %.1f p50-ms %.1f p99-ms",
		msPerDelivery(f.boxTicks, f.arrived), msPerDelivery(f.stackTicks, f.arrived), ms(f.p50), ms(f.p99))
	if f.logged >= 0 {
		fmt.Fprintf(&b, " %.3f stack-cpu-ms/delivery-logged", msPerDelivery(f.loggedStackTicks, f.arrived))
	}
	fmt.Fprintln(w, b.String())
	fmt.Fprintf(w, "  %s\n", verdict(f))
}

// verdict says in words whether every event arrived once, signed, at its
// destination.
func verdict(f figures) string {
	s := fmt.Sprintf("%d of %d arrived; %d duplicates, %d bad signatures, %d at a wrong path, %d not of this phase",
		f.arrived, f.events, f.dups, f.unsigned, f.misrouted, f.unknown)
	if f.stalled {
		s += fmt.Sprintf("; %d MISSING (no arrival for the drain period)", f.events-f.arrived)
	}
	if f.logged >= 0 {
		s += fmt.Sprintf("; attempts in the log store %.1f s after the last arrival", f.logged.Seconds())
	}
	return s
}
