package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestOutage: a statement that says nothing about its events (the database
// down, out of time on the server or the client, cancelled) fails its
// group whole; one the database refused for a value is split to find it.
func TestOutage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"StatementTimeout", fmt.Errorf("store 3 events: %w", &pgconn.PgError{Code: "57014"}), true},
		{"LockTimeout", &pgconn.PgError{Code: "55P03"}, true},
		{"TooManyConnections", &pgconn.PgError{Code: "53300"}, true},
		{"Deadline", fmt.Errorf("store: %w", context.DeadlineExceeded), true},
		{"RoutingChanging", errRoutingChanging, true},
		{"InvalidText", &pgconn.PgError{Code: "22021"}, false},
		{"UniqueViolation", &pgconn.PgError{Code: "23505"}, false},
		{"AnyOtherError", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outage(tt.err); got != tt.want {
				t.Errorf("outage(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
