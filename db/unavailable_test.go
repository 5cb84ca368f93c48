package db_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jobhooks/jobhooks/db"
)

func TestUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Nothing listens on port 1: connecting is refused at once.
	unreachable, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/none?connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer unreachable.Close()
	refused := unreachable.Ping(ctx)
	closed, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	_, closedErr := closed.Exec(ctx, "SELECT 1")

	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"ConnectionRefused", fmt.Errorf("authenticate: %w", refused), true},
		{"ClosedPool", fmt.Errorf("list: %w", closedErr), true},
		{"TooManyConnections", &pgconn.PgError{Code: "53300"}, true},
		{"AdminShutdown", fmt.Errorf("get: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"StartingUp", &pgconn.PgError{Code: "57P03"}, true},
		{"ConnectionFailure", &pgconn.PgError{Code: "08006"}, true},
		{"ReadOnlyStandby", &pgconn.PgError{Code: "25006"}, true},
		{"ConnectionCutMidQuery", fmt.Errorf("get: %w", io.ErrUnexpectedEOF), true},
		{"Nil", nil, false},
		{"NoRows", fmt.Errorf("get: %w", pgx.ErrNoRows), false},
		{"UniqueViolation", &pgconn.PgError{Code: "23505"}, false},
		{"InvalidText", &pgconn.PgError{Code: "22021"}, false},
		{"QueryCanceled", &pgconn.PgError{Code: "57014"}, false},
		{"ClientWentAway", context.Canceled, false},
		{"AnyOtherError", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := db.Unavailable(tt.err); got != tt.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
