package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jobhooks/jobhooks"
)

// jsonTextFault describes the first character of the JSON text raw (already
// checked to be valid JSON) that the service cannot store as sent, or "":
// a NUL (the escape \u0000), which PostgreSQL text and jsonb refuse;
// invalid UTF-8; or a lone UTF-16 surrogate escape ("\ud800" without its
// low half, or a low half alone), which is no character. encoding/json turns
// the last two into U+FFFD without a word, so they are only seen here, in
// the raw text. Outside strings valid JSON is ASCII without escapes, so
// raw may be any JSON value: a string, a number, a whole object.
func jsonTextFault(raw []byte) string {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				return "invalid UTF-8"
			}
			i += size
		case c == '\\' && i+1 < len(raw) && raw[i+1] == 'u':
			r, ok := hex4(raw[i+2:])
			switch {
			case !ok: // not valid JSON; the decoder has refused it
				i += 2
			case r == 0:
				return `a NUL character (\u0000)`
			case utf16.IsSurrogate(r):
				if low, ok := lowSurrogateAt(raw[i+6:]); ok && utf16.DecodeRune(r, low) != utf8.RuneError {
					i += 12
					continue
				}
				return fmt.Sprintf(`a lone surrogate (\u%04x)`, r)
			default:
				i += 6
			}
		case c == '\\':
			i += 2 // a one-letter escape, "\\" included
		default:
			i++
		}
	}
	return ""
}

// lowSurrogateAt reads a \uXXXX escape at the start of b.
func lowSurrogateAt(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	return hex4(b[2:])
}

// textFieldError is the 400 for a field whose text holds fault.
func textFieldError(field, fault string) error {
	return webhooks.FieldErrorf(field, "%s must be valid UTF-8 text without NUL characters; it holds %s.", field, fault)
}

// eventData is an ingested event's "data" object: its members with their
// values as sent, and the first member whose name or value holds text the
// service cannot store (jsonTextFault), so that the event is refused
// before it joins a group commit.
type eventData struct {
	members map[string]json.RawMessage
	fault   error
}

func (d *eventData) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if b[0] != '{' { // the decoder hands over the value without leading space
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[eventData]()}
	}
	if err := json.Unmarshal(b, &d.members); err != nil {
		return err
	}
	d.fault = dataTextFault(b)
	return nil
}

// dataTextFault returns the error naming the first member of the JSON object
// obj whose name or value holds a jsonTextFault: "data" for a name,
// "data.<name>" for a value (nested values included).
func dataTextFault(obj []byte) error {
	// One pass over the whole object finds whether any text is at fault;
	// only then are the members walked to name it (names and values start
	// outside strings, so both passes read escapes alike).
	if jsonTextFault(obj) == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return nil // not an object: decoding has refused it
	}
	for dec.More() {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if fault := jsonTextFault(obj[start:dec.InputOffset()]); fault != "" {
			return webhooks.FieldErrorf("data", "data member names must be valid UTF-8 text without NUL characters; one holds %s.", fault)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if fault := jsonTextFault(value); fault != "" {
			name, _ := tok.(string)
			return textFieldError("data."+name, fault)
		}
	}
	return nil
}
