package review

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPageWalks(t *testing.T) {
	multibyte := "diff --git a/ü b/ü\n+héllo wörld ✓✓✓ 日本語テキスト 🙂🙂\n" + strings.Repeat("é", 50) + "\n+" + strings.Repeat("🙂", 40) + "\n"
	tests := []struct {
		name      string
		diff      string
		pageBytes int
	}{
		{"multibyte tiny pages", multibyte, 1},
		{"multibyte odd pages", multibyte, 7},
		{"multibyte line pages", multibyte, 80},
		{"ascii lines", strings.Repeat("+0123456789\n", 100), 50},
		{"one long line", strings.Repeat("ж", 1000), 33},
		{"default size", strings.Repeat("+ü line\n", 10000), 0},
		{"invalid utf-8", "a\x80\x80\x80\x80\xff\xfeb\xe2\x82", 2},
		{"empty", "", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			offset, pages := 0, 0
			for {
				text, next, done := Page(tt.diff, offset, tt.pageBytes)
				pages++
				size := tt.pageBytes
				if size <= 0 {
					size = DefaultPageBytes
				}
				if len(text) > size && utf8.RuneCountInString(text) > 1 {
					t.Fatalf("page of %d bytes exceeds %d", len(text), size)
				}
				if utf8.ValidString(tt.diff) && !utf8.ValidString(text) {
					t.Fatalf("page %d splits a character: %q", pages, text)
				}
				if next != offset+len(text) {
					t.Fatalf("next = %d, want %d", next, offset+len(text))
				}
				// A page that could end after a newline does, after the last.
				window := tt.diff[offset:min(len(tt.diff), offset+size)]
				if i := strings.LastIndexByte(window, '\n'); i >= 0 && !done && text != window[:i+1] {
					t.Fatalf("page %d = %q, want it to end at the last line break of %q", pages, text, window)
				}
				got.WriteString(text)
				if done {
					break
				}
				if len(text) == 0 {
					t.Fatal("empty page before the end")
				}
				offset = next
			}
			if got.String() != tt.diff {
				t.Errorf("pages concatenate to %q, want %q", got.String(), tt.diff)
			}
		})
	}
}

func TestPageOffsets(t *testing.T) {
	diff := "aé\n" // 'é' is bytes 1-2
	tests := []struct {
		name      string
		offset    int
		wantText  string
		wantNext  int
		wantDone  bool
		pageBytes int
	}{
		{"negative", -5, "aé\n", 4, true, 10},
		{"inside a character", 2, "\n", 4, true, 10},
		{"at end", 4, "", 4, true, 10},
		{"past end", 99, "", 4, true, 10},
		{"page smaller than a character", 1, "é", 3, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, next, done := Page(diff, tt.offset, tt.pageBytes)
			if text != tt.wantText || next != tt.wantNext || done != tt.wantDone {
				t.Errorf("Page(%d) = %q, %d, %v; want %q, %d, %v", tt.offset, text, next, done, tt.wantText, tt.wantNext, tt.wantDone)
			}
		})
	}
}
