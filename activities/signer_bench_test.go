package activities

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"syscall"
	"testing"
	"time"

	webhooks "github.com/jobhooks/jobhooks"
	"github.com/jobhooks/jobhooks/deliveries"
	"github.com/jobhooks/jobhooks/identity"
	"github.com/jobhooks/jobhooks/internal/testenv"
	"github.com/jobhooks/jobhooks/secrets"
	"github.com/jobhooks/jobhooks/signingkeys"
)

// processCPU is the CPU time the process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSigner is the signing of one attempt of a ~1 KB delivery as the
// worker does it (secrets cached, keys cached): the HMACs alone (no
// SigningKeys), with the account's Ed25519 key, and during a rotation's
// overlap (two Ed25519 signatures).
func BenchmarkSigner(b *testing.B) {
	db := testenv.NewDatabase(b)
	box, err := secrets.NewBox([]secrets.Key{{ID: "k1", Key: make([]byte, 32)}})
	if err != nil {
		b.Fatal(err)
	}
	acct, err := identity.NewStore(db.Pool).CreateAccount(context.Background(), "bench", webhooks.PlanTeam)
	if err != nil {
		b.Fatal(err)
	}
	store := signingkeys.NewStore(db.Pool, box)
	body := bytes.Repeat([]byte("x"), 1024)
	keyID, sealed := box.Seal("the-hmac-secret", "wsu_bench")
	cases := []struct {
		name   string
		keys   AccountSigningKeys
		rotate bool
	}{
		{"HMACOnly", nil, false},
		{"HMACAndEd25519", signingkeys.NewCache(store, nil), false},
		{"HMACAndEd25519Overlap", signingkeys.NewCache(store, nil), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.rotate {
				if _, err := store.Rotate(context.Background(), acct.ID, time.Now(), signingkeys.DefaultOverlap); err != nil {
					b.Fatal(err)
				}
			}
			s := New(Deps{Box: box, Logger: slog.New(slog.DiscardHandler), SigningKeys: c.keys}).Rounds.send
			target := deliveries.WebhookTarget{ID: "wsu_bench", AccountID: acct.ID, SecretKeyID: keyID, SecretCiphertext: sealed, SecretVersion: 1}
			sign := s.signer(context.Background(), target)
			h := http.Header{}
			if err := sign(h, "wdl_0123456789abcdef0123456789", body); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if err := sign(h, "wdl_0123456789abcdef0123456789", body); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine wall time per op counts the waits for a
			// core; the CPU time this process spent does not.
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
