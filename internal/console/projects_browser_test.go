package console_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/devspace-dev/devspace/internal/apptest"
	"github.com/devspace-dev/devspace/internal/browsertest"
)

// TestProjectsKeyboard: with the keyboard alone the Owner clears a
// Project's tool home and removes an orphaned one from the Projects page,
// each behind its confirmation box, and the page reports no error.
func TestProjectsKeyboard(t *testing.T) {
	needLandlock(t)
	env := apptest.Start(t, apptest.Options{Env: execScopes})
	g := openGrant(t, env, "toolsmith")
	if sc := g.shell(`mkdir -p "$HOME/bin" && echo tool > "$HOME/bin/tool" && echo planted`); !strings.Contains(sc["output"].(string), "planted") {
		t.Fatalf("plant: %v", sc)
	}
	tools, _ := env.LookupEnv("DEVSPACE_TOOLS_DIR")
	orphan := filepath.Join(tools, "t-00112233445566778899aabb")
	if err := os.MkdirAll(filepath.Join(orphan, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}

	b := browsertest.New(t)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(link(t, env)), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		t.Fatal(err)
	}
	base, _ := placeOf(t, b)
	for _, tc := range []struct{ form, flash string }{
		{`form[action$="/projects/clear-tools"]`, "Tool home cleared"},
		{`form[action$="/projects/clear-orphan-tools"]`, "no configured Project were removed"},
	} {
		if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/projects"), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
			t.Fatal(err)
		}
		tabTo(t, b, tc.form+` input[name="confirm"]`)
		if err := chromedp.Do(b.Ctx(), chromedp.KeyEvent(" ")); err != nil {
			t.Fatal(err)
		}
		tabTo(t, b, tc.form+` button.danger`)
		pressEnter(t, b)
		if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
			html, _ := chromedpHTML(b)
			t.Fatalf("%s: no message: %v\n%s", tc.form, err, html)
		}
		if text, _ := chromedp.Run(b.Ctx(), chromedp.Text(chromedp.CSS(`.flash`))); !strings.Contains(text, tc.flash) {
			t.Errorf("%s: %q, want %q", tc.form, text, tc.flash)
		}
	}
	if sc := g.shell(`test -e "$HOME/bin/tool" && echo still || echo gone`); !strings.Contains(sc["output"].(string), "gone") {
		t.Errorf("the tool survived the clear: %v", sc)
	}
	if _, err := os.Lstat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
