// Package freeport finds loopback TCP addresses nothing listens on, for
// servers that tests, the benchmark and dev tooling start on a free port.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// Ports returns n distinct ports on 127.0.0.1 that were free a moment ago.
// They are below 32768: Temporal stores membership ports in a PostgreSQL
// smallint, and Linux never hands ports there out as the source port of an
// outgoing connection, so nothing takes them between the check and the use.
func Ports(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		port := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found only %d of %d free ports below 32768", len(ports), n)
	}
	return ports, nil
}

// Addr returns a "127.0.0.1:port" address that was free a moment ago.
func Addr() (string, error) {
	ports, err := Ports(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}
