package mcpserver

import (
	"testing"
	"time"

	"github.com/devspace-dev/devspace/internal/testutil"
)

// TestSessionTrackerIdleFollowsPOSTs: the tracker forgets a session when
// the SDK closes it — idle for the timeout since its latest POST ended,
// never while a POST is in progress — so a long tool call cannot drop a
// live session from its grant's count. (A POST longer than the idle
// timeout cannot be made over HTTP without running commands, hence the
// fake clock and direct sweeps.)
func TestSessionTrackerIdleFollowsPOSTs(t *testing.T) {
	const idle = time.Hour // the tracker's own sweep timer never fires here
	clock := testutil.NewClock(time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC))
	tr := newSessionTracker(idle, 8)
	tr.now = clock.Now
	t.Cleanup(func() {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.timer != nil {
			tr.timer.Stop()
		}
	})
	tracked := func(id string) bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		_, ok := tr.byID[id]
		return ok
	}
	tr.opened("g", "busy")
	tr.opened("g", "quiet")
	tr.began("busy")
	clock.Advance(2 * idle)
	tr.sweep()
	if !tracked("busy") || tracked("quiet") {
		t.Fatalf("after 2h with a POST in progress on busy: busy tracked %v, quiet tracked %v; want true, false",
			tracked("busy"), tracked("quiet"))
	}
	tr.ended("busy")
	clock.Advance(idle - time.Second)
	tr.sweep()
	if !tracked("busy") {
		t.Fatal("busy forgotten before the idle timeout since its POST ended")
	}
	clock.Advance(time.Second)
	tr.sweep()
	if tracked("busy") {
		t.Fatal("busy still tracked the idle timeout after its POST ended")
	}
}
