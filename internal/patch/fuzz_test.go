package patch

import (
	"context"
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// can be matched against arbitrary content without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a\n@@ ctx\n a\n-b\n+c\n*** End of File\n*** End Patch",
		"apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
		"*** Begin Patch\r\n*** Update File: a\r\n*** Move to: b\r\n@@ -1,1 +1,2000000000 @@\r\n-a\r\n\\ No newline at end of file\r\n+b\r\n*** End Patch\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		if len(p.Files) == 0 || len(p.Paths()) < len(p.Files) {
			t.Fatalf("accepted patch without files: %+v", p)
		}
		for _, f := range p.Files {
			if f.Kind != Update || len(f.Hunks) == 0 {
				continue
			}
			_, _ = applyHunks([]byte(text), f, newBudget(context.Background()))
			_, _ = applyHunks(nil, f, newBudget(context.Background()))
		}
	})
}
