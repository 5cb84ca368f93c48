package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestVerifySignature(t *testing.T) {
	body := `{"jobId":"1"}`
	good := sign("s3cret", body)
	for _, tc := range []struct {
		name, secret, header string
		want                 bool
	}{
		{name: "Valid", secret: "s3cret", header: "v0=" + good, want: true},
		{name: "ValidAmongRotatedSecrets", secret: "s3cret", header: "v0=" + sign("old", body) + "," + good, want: true},
		{name: "WrongSecret", secret: "other", header: "v0=" + good},
		{name: "NoVersionPrefix", secret: "s3cret", header: good},
		{name: "NotHex", secret: "s3cret", header: "v0=zz"},
		{name: "NoHeader", secret: "s3cret", header: ""},
		{name: "UnknownDestination", secret: "", header: "v0=" + sign("", body)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifySignature(tc.secret, []byte(body), tc.header); got != tc.want {
				t.Errorf("verifySignature = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTracker_CountsEachFaultAndClosesWhenAllArrived(t *testing.T) {
	tr := newTracker(map[string]string{"e1": "d1", "e2": "d2"})
	at := time.Unix(100, 0)
	tr.accept("e1", at)
	tr.arrive("e1", "d1", true, at.Add(-time.Millisecond)) // beat its 202 back
	tr.arrive("e1", "d1", true, at.Add(time.Second))       // duplicate
	tr.arrive("zz", "d1", true, at)                        // not of the phase
	select {
	case <-tr.done:
		t.Fatal("done before every event arrived")
	default:
	}
	tr.accept("e2", at)
	tr.arrive("e2", "d1", false, at.Add(10*time.Millisecond)) // wrong path and unsigned
	select {
	case <-tr.done:
	default:
		t.Fatal("not done after every event arrived")
	}
	f := tr.figures(at)
	if f.arrived != 2 || f.dups != 1 || f.unknown != 1 || f.misrouted != 1 || f.unsigned != 0 {
		t.Errorf("figures = %+v; want 2 arrived, 1 duplicate, 1 unknown, 1 misrouted (a misrouted arrival is not also counted unsigned)", f)
	}
	if f.p99 != 10*time.Millisecond || f.elapsed != 10*time.Millisecond {
		t.Errorf("p99 %v, elapsed %v; want 10ms each (an arrival before its 202 counts 0)", f.p99, f.elapsed)
	}
}
