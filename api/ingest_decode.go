package api

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/gin-gonic/gin"
)

// decodeIngestRequest reads one event's body (POST
// /internal/v1/job-run-events) as decodeJSON(c, req, ignoreUnknown) does.
// A plain event, the body producers send, is read in one pass over its
// bytes after one validation (readIngestRequest); any other body goes
// through decodeJSON, which says what is wrong with it, so what is
// refused and how is decodeJSON's alone.
func decodeIngestRequest(c *gin.Context, req *ingestRequest) error {
	return decodeInOnePass(c, req, readIngestRequest)
}

// decodeInOnePass reads the body into req with read when read takes it,
// and otherwise, from the start again, with decodeJSON(c, req,
// ignoreUnknown), which says what is wrong with it.
func decodeInOnePass[T any](c *gin.Context, req *T, read func(body []byte, req *T) bool) error {
	body, err := io.ReadAll(c.Request.Body)
	if err == nil && read(body, req) {
		return nil
	}
	var zero T
	*req = zero
	c.Request.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failedReader{err}))
	return decodeJSON(c, req, ignoreUnknown)
}

// failedReader ends a replayed body as the original did: with its read
// error (a body over the limit) or at its end.
type failedReader struct{ err error }

func (r failedReader) Read([]byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	return 0, io.EOF
}

// readIngestRequest reads body into req when it is valid JSON, an object
// whose member names hold no escapes and name no known member twice, whose
// eventType is a string or null and whose data is an object or null: the
// members as decodeJSON with ignoreUnknown keeps them (exact names; the
// values as sent, sharing body's bytes). Otherwise it returns false and
// req is to be discarded.
func readIngestRequest(body []byte, req *ingestRequest) bool {
	if !json.Valid(body) {
		return false
	}
	i := skipSpace(body, 0)
	return body[i] == '{' && readIngestObject(body, i, req)
}

// decodeIngestBatch reads a batch's body (POST
// /internal/v1/job-run-events/batch) as decodeJSON(c, req, ignoreUnknown)
// does: in one pass when every event is a plain one (readIngestBatch),
// otherwise through decodeJSON, which says what is wrong.
func decodeIngestBatch(c *gin.Context, req *ingestBatchRequest) error {
	return decodeInOnePass(c, req, readIngestBatch)
}

// readIngestBatch reads body into req when it is valid JSON, an object
// whose member names hold no escapes, with events once, null (read as no
// events) or an array of objects each of which readIngestObject reads (other members are
// dropped, as decodeJSON with ignoreUnknown drops them). Otherwise it
// returns false and req is to be discarded.
func readIngestBatch(body []byte, req *ingestBatchRequest) bool {
	if !json.Valid(body) {
		return false
	}
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return false
	}
	seen := false
	return objectMembers(body, i, func(name, value []byte) bool {
		if string(name) != "events" {
			return true
		}
		if seen {
			return false // events twice: decodeJSON's rules apply
		}
		seen = true
		req.Events = []ingestRequest{} // decodeJSON's filter reads null as [] too
		switch value[0] {
		case 'n':
			return true
		case '[':
		default:
			return false
		}
		return arrayElements(value, func(event []byte) bool {
			req.Events = append(req.Events, ingestRequest{})
			return event[0] == '{' && readIngestObject(event, 0, &req.Events[len(req.Events)-1])
		})
	})
}

// readIngestObject reads the object at b[i] (b valid JSON) into req as
// readIngestRequest says.
func readIngestObject(b []byte, i int, req *ingestRequest) bool {
	seen := 0 // known members read, as bits
	return objectMembers(b, i, func(name, value []byte) bool {
		bit := 0
		switch string(name) {
		case "accountId":
			bit, req.AccountID = 1, value
		case "eventType":
			bit = 2
			if !readEventType(value, &req.EventType) {
				return false
			}
		case "eventId":
			bit, req.EventID = 4, value
		case "data":
			bit = 8
			if !readEventData(value, &req.Data) {
				return false
			}
		}
		if seen&bit != 0 {
			return false // a known member twice: decodeJSON's rules apply
		}
		seen |= bit
		return true
	})
}

// readEventType reads an eventType that is null (left as it is) or a
// string; a string with escapes or other than printable ASCII goes through
// encoding/json.
func readEventType(value []byte, dst *string) bool {
	switch {
	case string(value) == "null":
		return true
	case value[0] != '"':
		return false
	}
	if s, ok := plainJSONText(value); ok {
		*dst = s
		return true
	}
	return json.Unmarshal(value, dst) == nil
}

// readEventData reads data as eventData.UnmarshalJSON does: null leaves it
// empty; an object gives its members (names without escapes) and its
// first text fault; anything else is not read.
func readEventData(value []byte, d *eventData) bool {
	switch value[0] {
	case 'n':
		return true
	case '{':
	default:
		return false
	}
	members := map[string]json.RawMessage{}
	if !objectMembers(value, 0, func(name, v []byte) bool {
		members[string(name)] = v
		return true
	}) {
		return false
	}
	d.members, d.fault = members, dataTextFault(value)
	return true
}

// objectMembers calls member with the name (the bytes between its quotes)
// and the value of each member of the object that starts at b[i], in
// order. b must be valid JSON. It stops with false at a name holding an
// escape or when member returns false.
func objectMembers(b []byte, i int, member func(name, value []byte) bool) bool {
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return true
	}
	for {
		end := skipString(b, i)
		name := b[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		i = skipSpace(b, end) // at ':'
		i = skipSpace(b, i+1) // at the value
		end = skipValue(b, i)
		if !member(name, b[i:end]) {
			return false
		}
		if i = skipSpace(b, end); b[i] == '}' { // at ',' or '}'
			return true
		}
		i = skipSpace(b, i+1)
	}
}

// arrayElements calls element with each value of the array that starts at
// b[0], in order. b must be valid JSON. It stops with false when element
// returns false.
func arrayElements(b []byte, element func(value []byte) bool) bool {
	i := skipSpace(b, 1)
	if b[i] == ']' {
		return true
	}
	for {
		end := skipValue(b, i)
		if !element(b[i:end]) {
			return false
		}
		if i = skipSpace(b, end); b[i] == ']' { // at ',' or ']'
			return true
		}
		i = skipSpace(b, i+1)
	}
}

// skipValue returns where the valid JSON value at b[i] ends.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) && !isJSONSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// skipString returns where the valid JSON string at b[i] ends (after its
// closing quote).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isJSONSpace(b[i]) {
		i++
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
