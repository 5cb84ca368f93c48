package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"unicode/utf16"
	"unicode/utf8"
)

// verbatimString is a JSON string decoded as sent. encoding/json replaces
// invalid UTF-8 and lone surrogate escapes ("\ud800") with U+FFFD, which
// would store text the client never sent; here invalid bytes are kept and a
// lone surrogate becomes the invalid bytes of its code point, so the domain
// rules see the fault and refuse it, naming the field.
type verbatimString string

func (s *verbatimString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[string]()}
	}
	text, err := unquoteVerbatim(b[1 : len(b)-1])
	if err != nil {
		return err
	}
	*s = verbatimString(text)
	return nil
}

// stringPtr returns s as a *string; nil stays nil (the field was absent).
func (s *verbatimString) stringPtr() *string {
	if s == nil {
		return nil
	}
	v := string(*s)
	return &v
}

// jsonKind names the kind of a JSON value as encoding/json's type errors do.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "value"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	default:
		return "number"
	}
}

var errBadEscape = errors.New("invalid escape in JSON string")

// unquoteVerbatim resolves the escapes of a JSON string's contents (the
// decoder has checked its syntax) and copies every other byte unchanged.
func unquoteVerbatim(in []byte) ([]byte, error) {
	if !bytes.ContainsRune(in, '\\') {
		return in, nil
	}
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		if in[i] != '\\' {
			out = append(out, in[i])
			continue
		}
		i++
		if i == len(in) {
			return nil, errBadEscape
		}
		switch in[i] {
		case '"', '\\', '/':
			out = append(out, in[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(in[i+1:])
			if !ok {
				return nil, errBadEscape
			}
			i += 4
			if !utf16.IsSurrogate(r) {
				out = utf8.AppendRune(out, r)
				continue
			}
			if rest := in[i+1:]; len(rest) >= 6 && rest[0] == '\\' && rest[1] == 'u' {
				if low, ok := hex4(rest[2:]); ok {
					if pair := utf16.DecodeRune(r, low); pair != utf8.RuneError {
						out = utf8.AppendRune(out, pair)
						i += 6
						continue
					}
				}
			}
			// A lone surrogate is no character: keep its three bytes, which
			// are not valid UTF-8.
			out = append(out, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
		default:
			return nil, errBadEscape
		}
	}
	return out, nil
}

// hex4 parses the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
