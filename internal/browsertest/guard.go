package browsertest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// guard pauses every request of the tab with the Fetch domain and fails the
// ones for non-loopback addresses with BlockedByClient, so that no packet for
// them is ever sent. The subscription starts before Fetch.enable, so no
// paused request is missed.
func (b *Browser) guard() error {
	paused := chromedp.Events(b.ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{}); err != nil {
		return fmt.Errorf("enabling request interception: %w", err)
	}
	go func() {
		for ev, err := range paused {
			if err != nil {
				return // the tab is closing
			}
			if isLoopbackURL(ev.Request.URL) {
				// Fails only when the request was cancelled meanwhile.
				_, _ = chromedp.Call(b.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			b.mu.Lock()
			b.blocked = append(b.blocked, ev.Request.URL)
			b.mu.Unlock()
			_, _ = chromedp.Call(b.ctx, fetch.FailRequest, fetch.FailRequestParams{
				RequestID:   ev.RequestID,
				ErrorReason: network.ErrorReasonBlockedByClient,
			})
		}
	}()
	return nil
}

// isLoopbackURL reports whether loading raw stays on this machine: an
// http(s) or ws(s) URL for localhost or a loopback IP, or a scheme that never
// touches the network. Anything else, including unparsable URLs, is not.
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about":
		return true
	case "http", "https", "ws", "wss":
		h := strings.ToLower(u.Hostname())
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return true // Chromium resolves these to loopback itself
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	default:
		return false
	}
}

// sink is a proxy on loopback that closes every connection unanswered. The
// browser sends it all non-loopback traffic that the Fetch guard does not
// see, so that traffic dies here instead of leaving the machine.
type sink struct {
	ln net.Listener
	wg sync.WaitGroup
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the proxy sink: %w", err)
	}
	s := &sink{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			c.Close()
		}
	})
	return s, nil
}

func (s *sink) addr() string { return s.ln.Addr().String() }

func (s *sink) close() {
	s.ln.Close()
	s.wg.Wait()
}
