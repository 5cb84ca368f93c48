package deliveries

import "encoding/hex"

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
	b, _ := hex.DecodeString(hexDigits) // lowercase hex digits only, checked above
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
