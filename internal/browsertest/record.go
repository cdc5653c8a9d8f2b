package browsertest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// record runs in the tab's event loop (see chromedp.Listen), so it only
// appends under the lock and never sends a command.
//
// Navigations come from Network.requestWillBeSent for main-frame documents:
// it fires for every redirect hop with the hop's URL before any connection is
// tried, so a redirect to an unreachable redirect_uri is recorded although
// the page never loads.
func (b *Browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
		if ev.Type == network.ResourceTypeDocument && string(ev.FrameID) == b.mainFrame {
			b.navigated(ev.Request.URL + ev.Request.URLFragment)
		}
	case *fetch.EventRequestPaused:
		// A paused request without a network ID never had a
		// requestWillBeSent, so this is the only sight of it.
		if ev.NetworkID == "" {
			b.requests = append(b.requests, ev.Request.URL)
		}
	case *page.EventNavigatedWithinDocument:
		if string(ev.FrameID) == b.mainFrame {
			b.navigated(ev.URL)
		}
	case *runtime.EventExceptionThrown:
		msg := ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
		b.console = append(b.console, "exception: "+msg)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			b.console = append(b.console, "console."+string(ev.Type)+": "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.console = append(b.console, "log "+string(ev.Entry.Source)+" "+string(ev.Entry.Level)+": "+ev.Entry.Text+" "+ev.Entry.URL)
		}
	}
}

// ConsoleErrors returns what the tab reported as going wrong, in order:
// uncaught exceptions, console.error and console.warn calls, and the
// browser's own error and warning log entries (a resource that failed to
// load, a Content-Security-Policy violation).
func (b *Browser) ConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.console)
}

// navigated appends u to the navigations and wakes WaitNavigation. b.mu must
// be held.
func (b *Browser) navigated(u string) {
	b.navigations = append(b.navigations, u)
	close(b.changed)
	b.changed = make(chan struct{})
}

// Requests returns the URL of every request the tab made, in order: documents,
// subresources, redirect hops and navigations, including failed and blocked
// ones. Fragments are not part of a request URL.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.requests)
}

// Navigations returns the main-frame URLs the tab navigated to, in order,
// including every redirect hop and targets that failed to load or were
// blocked.
func (b *Browser) Navigations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.navigations)
}

// Blocked returns the URLs whose requests the network guard failed because
// they were not for a loopback address, in order. The guard acts on its own
// goroutine, so a URL can show up here a moment after it shows up in Requests
// and Navigations; a request for the page's own load is here before the load
// event.
func (b *Browser) Blocked() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.blocked)
}

// WaitNavigation returns the first main-frame navigation, past or future,
// whose URL starts with prefix. It waits at most [ActionTimeout] and then
// returns an error listing the navigations seen. Use a prefix specific
// enough (for example with the state parameter) when a test navigates to the
// same place twice.
func (b *Browser) WaitNavigation(prefix string) (string, error) {
	ctx, cancel := context.WithTimeout(b.ctx, ActionTimeout)
	defer cancel()
	for {
		b.mu.Lock()
		i := slices.IndexFunc(b.navigations, func(u string) bool { return strings.HasPrefix(u, prefix) })
		if i >= 0 {
			u := b.navigations[i]
			b.mu.Unlock()
			return u, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for a navigation to %q (saw %q): %w", prefix, b.Navigations(), ctx.Err())
		}
	}
}
