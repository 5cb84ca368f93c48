// Package untrusted makes text that came from outside (a receiver's
// answer, its headers, an error that quotes them) fit to store and log.
package untrusted

import (
	"strings"
	"unicode/utf8"
)

// Text returns s as valid UTF-8 without NUL or other control characters
// but tab, newline and carriage return (each replaced by U+FFFD: PostgreSQL's
// text refuses NUL, and a terminal obeys escapes), cut to at most maxBytes
// bytes between runes (maxBytes <= 0: no bound). Clean text comes back as
// it is, without copying.
func Text(s string, maxBytes int) string {
	if maxBytes > 0 && len(s) > maxBytes {
		s = s[:maxBytes] // may cut a rune: it becomes U+FFFD below, then is trimmed
	}
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if isControl(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	out := b.String()
	for maxBytes > 0 && len(out) > maxBytes {
		_, size := utf8.DecodeLastRuneInString(out)
		out = out[:len(out)-size]
	}
	return out
}

// Bytes is Text of b.
func Bytes(b []byte, maxBytes int) string {
	if maxBytes > 0 && len(b) > maxBytes {
		b = b[:maxBytes]
	}
	return Text(string(b), maxBytes)
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return utf8.ValidString(s[i:]) && !strings.ContainsFunc(s[i:], isControl)
		}
		if isControl(rune(c)) {
			return false
		}
	}
	return true
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// Ends is Text of s, and when that is longer than maxBytes, its first
// headBytes or so and as much of its end as fits, joined by joint: the end
// of an error message is where its cause is ("... connect: connection
// refused"), after a long URL or a quote of what a receiver sent.
func Ends(s string, maxBytes, headBytes int, joint string) string {
	if len(s) <= maxBytes {
		if c := Text(s, 0); len(c) <= maxBytes { // cleaning may grow it: a replaced byte takes 3
			return c
		}
	}
	head := Text(s, headBytes)
	room := maxBytes - len(head) - len(joint)
	start := max(len(s)-room, 0)
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	tail := Text(s[start:], 0)
	for len(tail) > room {
		_, size := utf8.DecodeRuneInString(tail)
		tail = tail[size:]
	}
	return head + joint + tail
}
