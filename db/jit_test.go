package db_test

import (
	"net/url"
	"testing"

	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/internal/testenv"
)

// TestOpen_JITOffUnlessTheURLChooses: the service's connections run
// without JIT compilation; a URL that sets jit keeps its choice.
func TestOpen_JITOffUnlessTheURLChooses(t *testing.T) {
	d := testenv.NewDatabase(t)
	chosen, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := chosen.Query()
	q.Set("jit", "on")
	chosen.RawQuery = q.Encode()
	for _, tc := range []struct {
		name, url, want string
	}{
		{"default", d.URL, "off"},
		{"chosen in the URL", chosen.String(), "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := db.Open(t.Context(), tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			for range 3 { // every connection, not only the first
				var jit string
				if err := pool.QueryRow(t.Context(), "SHOW jit").Scan(&jit); err != nil {
					t.Fatal(err)
				}
				if jit != tc.want {
					t.Errorf("jit = %s, want %s", jit, tc.want)
				}
			}
		})
	}
}
