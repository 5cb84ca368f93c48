package untrusted_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jobhooks/jobhooks/untrusted"
)

func TestText(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"CleanIsKept", "ok\tdone\r\n", 0, "ok\tdone\r\n"},
		{"NULIsReplaced", "ok\x00rest", 0, "ok\uFFFDrest"},
		{"InvalidUTF8IsReplaced", "a\xff\xfeb", 0, "a\uFFFDb"},
		{"EscapesAreReplaced", "\x1b[31mred", 0, "\uFFFD[31mred"},
		{"C1ControlsAreReplaced", "a\u0085b", 0, "a\uFFFDb"},
		{"CutToBytes", "abcdef", 3, "abc"},
		{"CutBetweenRunes", "aé", 2, "a"},
		{"CutAfterReplacement", "\x00\x00\x00", 4, "\uFFFD"},
		{"UnicodeIsKept", "héllo ✓", 0, "héllo ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := untrusted.Text(tt.in, tt.max)
			if got != tt.want {
				t.Fatalf("Text(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func FuzzText(f *testing.F) {
	f.Add("ok\x00\xff", 5)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 1024
		got := untrusted.Text(s, max)
		if !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
			t.Fatalf("Text(%q) = %q: not clean", s, got)
		}
		if max > 0 && len(got) > max {
			t.Fatalf("Text(%q, %d) = %q: %d bytes", s, max, got, len(got))
		}
	})
}

func TestEnds(t *testing.T) {
	long := "Post \"https://h/" + strings.Repeat("a", 3000) + "\": connect: connection refused"
	tests := []struct {
		name, in string
		want     func(string) bool
	}{
		{"ShortIsKept", "receiver answered 503", func(s string) bool { return s == "receiver answered 503" }},
		{"ShortIsCleaned", "ok\x00", func(s string) bool { return s == "ok\uFFFD" }},
		{"LongKeepsBothEnds", long, func(s string) bool {
			return len(s) <= 100 && strings.HasPrefix(s, "Post \"https://h/") && strings.HasSuffix(s, "connect: connection refused") && strings.Contains(s, "…")
		}},
		{"LongDirtyIsCleanAndBounded", strings.Repeat("\x00é", 500), func(s string) bool {
			return len(s) <= 100 && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := untrusted.Ends(tt.in, 100, 30, "…"); !tt.want(got) {
				t.Fatalf("Ends(%.40q…) = %q (%d bytes)", tt.in, got, len(got))
			}
		})
	}
}
