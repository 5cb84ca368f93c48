// Package netguardtest gives tests a DNS resolver whose answers they choose,
// so "a host name that resolves to a private address" needs no real DNS.
package netguardtest

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver returns a *net.Resolver that answers A and AAAA queries from
// records (host name -> addresses; other names do not exist). It serves DNS
// on a loopback UDP port that is closed when tb ends.
func Resolver(tb testing.TB, records map[string][]netip.Addr) *net.Resolver {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("netguardtest: listen: %v", err)
	}
	zone := map[string][]netip.Addr{}
	for name, addrs := range records {
		zone[canonical(name)] = addrs
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serve(pc, zone)
	}()
	tb.Cleanup(func() {
		_ = pc.Close()
		wg.Wait()
	})
	addr := pc.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

func serve(pc net.PacketConn, zone map[string][]netip.Addr) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if resp, ok := answer(buf[:n], zone); ok {
			_, _ = pc.WriteTo(resp, from)
		}
	}
}

func answer(query []byte, zone map[string][]netip.Addr) ([]byte, bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	addrs, known := zone[strings.ToLower(q.Name.String())]
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: hdr.ID, Response: true, Authoritative: true, RecursionDesired: hdr.RecursionDesired,
		RecursionAvailable: true, RCode: rcode,
	})
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			if b.AResource(rh, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil, false
			}
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			if b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()}) != nil {
				return nil, false
			}
		}
	}
	resp, err := b.Finish()
	return resp, err == nil
}
