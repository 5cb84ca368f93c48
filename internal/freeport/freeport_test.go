package freeport_test

import (
	"net"
	"testing"

	"github.com/jobhooks/jobhooks/internal/freeport"
)

func TestPorts_DistinctListenableAndBelowEphemeralRange(t *testing.T) {
	ports, err := freeport.Ports(5)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= 32768 || p < 1024 {
			t.Errorf("port %d outside 1024-32767", p)
		}
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
	}
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("Addr() = %s, not listenable: %v", addr, err)
	}
	ln.Close()
}
