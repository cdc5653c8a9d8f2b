package reads

import "testing"

// closes captures what the service registers with AfterClose.
type closes struct{ f func([]string) }

func (c *closes) AfterClose(f func([]string)) { c.f = f }

// TestLoadedSkillsGoWithTheExecution: the skills an execution loaded are
// forgotten when it closes (they used to stay until a restart), and only
// its own.
func TestLoadedSkillsGoWithTheExecution(t *testing.T) {
	c := &closes{}
	s := New(Options{Closes: c})
	if c.f == nil {
		t.Fatal("the service did not ask to hear of closes")
	}
	s.loaded.add("exe_a", "sk1")
	s.loaded.add("exe_b", "sk2")
	c.f([]string{"exe_a"})
	if got := s.loaded.get("exe_a"); len(got) != 0 {
		t.Errorf("closed execution still has %v loaded", got)
	}
	if got := s.loaded.get("exe_b"); !got["sk2"] {
		t.Errorf("another execution lost its skills: %v", got)
	}
	for i := range maxLoaded + 10 {
		s.loaded.add("exe_b", string(rune('a'+i%26))+string(rune('0'+i/26)))
	}
	if n := len(s.loaded.get("exe_b")); n != maxLoaded {
		t.Errorf("%d skills kept, bound %d", n, maxLoaded)
	}
}
