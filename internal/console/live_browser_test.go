package console_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devspace-dev/devspace/internal/browsertest"
	"github.com/devspace-dev/devspace/internal/console"
)

// waitFor evaluates a JavaScript condition until it holds or within
// fails the test.
func waitFor(t *testing.T, b *browsertest.Browser, cond string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[bool](cond))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			html, _ := chromedpHTML(b)
			t.Fatalf("not within %v: %s\n%s", within, cond, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLiveActivityInChromium (over fakes): the Activity page shows a
// running command's output as it grows and a new command within 2 s,
// tool calls as they happen, all as text however hostile; Interrupt and a
// patch's diff work from the keyboard; the charts page draws its charts.
func TestLiveActivityInChromium(t *testing.T) {
	h := newHarness(t)
	const evil = `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>`
	h.activity.commands = []console.Command{{ID: "cmd_1", GrantID: "grt_1", Client: "ChatGPT " + evil, Project: "alpha",
		CommandLine: "make test " + evil, Started: h.clock.Now().Add(-time.Minute), Running: true}}
	h.activity.tails["cmd_1"] = console.Output{Tail: "step 1\n" + evil + "\n", Total: 10}
	h.activity.patches = []console.Patch{{ID: "jrn_1", GrantID: "grt_1", Project: "alpha", At: h.clock.Now(),
		Files: []string{"src/" + evil + ".go"}, Diff: "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old\n+new " + evil + "\n"}}

	b := browsertest.New(t)
	if err := chromedp.Do(b.Ctx(), chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(h.srv.URL+"/signin?token="+h.con.NewLink()), chromedp.WaitVisible(chromedp.CSS(`nav`))); err != nil {
		t.Fatal(err)
	}
	base, _ := placeOf(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/activity"), chromedp.WaitVisible(chromedp.CSS(`#commands`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, `document.querySelector('pre[data-output="cmd_1"]').textContent.includes('step 1')`, 2*time.Second)
	// The output grows.
	h.activity.mu.Lock()
	h.activity.tails["cmd_1"] = console.Output{Tail: "step 1\nstep 2 done\n", Total: 30}
	h.activity.mu.Unlock()
	waitFor(t, b, `document.querySelector('pre[data-output="cmd_1"]').textContent.includes('step 2 done')`, 2*time.Second)
	// A second command appears with its output, within 2 s.
	h.activity.mu.Lock()
	h.activity.commands = append(h.activity.commands, console.Command{ID: "cmd_2", GrantID: "grt_1", Client: "ChatGPT", Project: "beta",
		CommandLine: "sleep 100 " + evil, Started: h.clock.Now(), Running: true})
	h.activity.tails["cmd_2"] = console.Output{Tail: "second " + evil, Total: 5}
	h.activity.mu.Unlock()
	waitFor(t, b, `!!document.querySelector('li.command[data-id="cmd_2"] pre.output') && document.querySelector('li.command[data-id="cmd_2"] pre.output').textContent.includes('second')`, 2*time.Second)
	// A tool call arrives on the stream.
	h.activity.publish(console.Call{At: h.clock.Now(), Tool: "read_files", GrantID: "grt_1", Client: evil, Project: "alpha",
		Duration: 7 * time.Millisecond, Code: "path_denied"})
	waitFor(t, b, `document.querySelector('#calls li').textContent.includes('path_denied')`, 2*time.Second)
	// Everything hostile stayed text.
	waitFor(t, b, `window.pwned === undefined && document.querySelectorAll('main img, main script').length === 0`, time.Second)
	over, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](overflow))
	if err != nil || over > 0 {
		t.Errorf("the Activity page at 390 px is %d px too wide (%v)", over, err)
	}

	// The patch's diff opens from the keyboard.
	tabTo(t, b, `details.patch summary`)
	pressEnter(t, b)
	waitFor(t, b, `document.querySelector('details.patch').open && document.querySelector('pre.diff').textContent.includes('+new')`, time.Second)
	// Interrupt the second command from the keyboard.
	tabTo(t, b, `li.command[data-id="cmd_2"] button.danger`)
	pressEnter(t, b)
	if err := chromedp.Do(b.Ctx(), chromedp.WaitVisible(chromedp.CSS(`.flash`))); err != nil {
		t.Fatal(err)
	}
	h.activity.mu.Lock()
	interrupted := append([]string(nil), h.activity.interrupted...)
	h.activity.mu.Unlock()
	if len(interrupted) != 1 || interrupted[0] != "cmd_2" {
		t.Fatalf("interrupted %v, want cmd_2", interrupted)
	}

	if err := chromedp.Do(b.Ctx(), chromedp.Navigate(base+"/charts"), chromedp.WaitVisible(chromedp.CSS(`.chart svg`))); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(b.Ctx(), chromedp.Evaluate[int](`document.querySelectorAll('.chart svg').length`))
	if err != nil || n != 5 {
		t.Errorf("charts drawn: %d (%v), want 5", n, err)
	}
	if errs := b.ConsoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
