package db

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Unavailable reports whether err means the database could not serve the
// request right now (unreachable, refusing or out of connections, shutting
// down or starting up, the pool closed at shutdown) rather than that it
// answered a query with an error. Callers answer it "try again later" (HTTP
// 503), not as a bug.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.Is(err, puddle.ErrClosedPool) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableSQLState(pgErr.Code)
	}
	var netErr net.Error
	return pgconn.Timeout(err) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unavailableSQLState reports whether a server error says the server cannot
// serve now, as opposed to refusing this query.
func unavailableSQLState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection_exception
		return true
	case strings.HasPrefix(code, "53"): // insufficient_resources: too_many_connections, disk_full, ...
		return true
	}
	switch code {
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return true
	case "25006": // read_only_sql_transaction: a write reached a standby during failover
		return true
	}
	return false
}
