package deliveries

import (
	"encoding/hex"

	"github.com/jackc/pgx/v5/pgtype"
)

// An event keeps its ingestion's W3C traceparent (version 00, as
// OpenTelemetry's propagator writes it: "00-" trace id "-" parent id "-"
// flags, in lowercase hex) as the 26 bytes it stands for, not its 55
// characters (migration 00040). Anything else is kept as nothing: the
// attempts' spans then start traces of their own.
const (
	traceParentText  = 55
	traceParentBytes = 26
)

// packTraceParent is the bytes an event keeps of a traceparent (empty:
// untraced, or not a version-00 traceparent).
func packTraceParent(s string) []byte {
	if len(s) != traceParentText || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return []byte{}
	}
	hexDigits := s[:2] + s[3:35] + s[36:52] + s[53:]
	for _, c := range []byte(hexDigits) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return []byte{}
		}
	}
	b, err := hex.DecodeString(hexDigits)
	if err != nil {
		return []byte{}
	}
	return b
}

// unpackTraceParent is the traceparent packTraceParent kept ("" for
// anything but its 26 bytes).
func unpackTraceParent(b []byte) string {
	if len(b) != traceParentBytes {
		return ""
	}
	h := hex.EncodeToString(b)
	return h[:2] + "-" + h[2:34] + "-" + h[34:50] + "-" + h[50:]
}

// uuidText is a workflow run id as the records keep it (migration 00040:
// NULL, no claim yet, is "").
func uuidText(u pgtype.UUID) string {
	if !u.Valid {
		return ""
	}
	v, err := u.Value()
	if err != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}
