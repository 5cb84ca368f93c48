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
