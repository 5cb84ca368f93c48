package deliveries

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jobhooks/jobhooks/db"
	"github.com/jobhooks/jobhooks/untrusted"
)

// What an attempt's record keeps of what its receiver sent, at most.
const (
	// StoredSnippetMax bounds the answer's body as recorded.
	StoredSnippetMax = 512
	// StoredMessageMax bounds the error message (it may quote the
	// receiver's status line, and names a client_url of up to 2,048
	// characters).
	StoredMessageMax = 4096
)

// storedSnippet and storedMessage are the one place where an attempt's
// texts are made fit for their columns, whoever built them: valid UTF-8
// without NUL (PostgreSQL refuses the row, and with it the whole group
// of outcomes written beside it), bounded.
func storedSnippet(s string) string { return untrusted.Text(s, StoredSnippetMax) }

func storedMessage(s string) string { return untrusted.Text(s, StoredMessageMax) }

// Refused reports whether a failed write was refused for what it holds
// (a data exception, a constraint), as opposed to an outage (the database
// away or overloaded, a deadlock or serialization failure, the context
// ended): written again as it is, a refused write fails again.
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || db.Unavailable(err) {
		return false
	}
	return !strings.HasPrefix(pgErr.Code, "40") // transaction rollback: it may pass again
}

// RefusalCode names a refusal by its SQLSTATE ("SQLSTATE 22021"), never
// by its message, which may quote the refused value.
func RefusalCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "SQLSTATE " + pgErr.Code
	}
	return "an unknown error"
}
