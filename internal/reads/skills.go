package reads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/skills"
)

// SkillsRequest is one skills call: load SkillID, or search Query from
// Cursor.
type SkillsRequest struct {
	Query   string
	Cursor  string
	SkillID string
}

// Skills is a page of skills found, or the skill loaded.
type Skills struct {
	Skills     []Skill
	NextCursor string
	Loaded     *LoadedSkill
	SupportURI string // the skill:// prefix of the loaded skill's support files
}

// maxLoaded bounds the skills one execution keeps loaded.
const maxLoaded = 256

// Skills searches the skills a Project offers, or loads one: its support
// files become readable (ReadFiles, skill://) for the rest of the
// execution.
func (s *Service) Skills(ctx context.Context, h executions.Handle, req SkillsRequest) (*Skills, error) {
	w, err := s.open(ctx, h)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if req.SkillID != "" {
		loaded, err := s.opts.Skills.Load(ctx, w.Root, req.SkillID)
		if errors.Is(err, skills.ErrNotFound) || errors.Is(err, skills.ErrInvalid) {
			return nil, ErrSkillNotFound
		}
		if err != nil {
			return nil, err
		}
		s.loaded.add(h.ID(), loaded.ID)
		return &Skills{Loaded: loaded, SupportURI: skills.URI(loaded.ID, "")}, nil
	}
	offset := 0
	sum := sha256.Sum256([]byte(req.Query))
	qh := hex.EncodeToString(sum[:8])
	if req.Cursor != "" {
		claims, err := s.opts.Cursors.Decode(req.Cursor, executions.CursorBinding(h), "skills")
		if err != nil {
			return nil, err
		}
		if claims.QueryHash != qh {
			return nil, ErrCursorOtherQuery
		}
		offset = int(claims.Offset)
	}
	items, next, done, err := s.opts.Skills.Search(ctx, w.Root, req.Query, offset, skills.DefaultSearchLimit)
	if errors.Is(err, skills.ErrBadQuery) {
		return nil, &InputError{Err: err}
	}
	if err != nil {
		return nil, err
	}
	out := &Skills{Skills: items}
	if !done {
		out.NextCursor, err = s.opts.Cursors.Encode(executions.CursorBinding(h), cursor.Claims{Kind: "skills", QueryHash: qh, Offset: int64(next)})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadedSkills remembers, per execution, which skills were loaded (their
// support files become readable). Kept in memory: after a restart a skill
// is simply loaded again; forgotten when the execution closes.
type loadedSkills struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (l *loadedSkills) add(executionID, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]map[string]bool{}
	}
	set := l.m[executionID]
	if set == nil {
		set = map[string]bool{}
		l.m[executionID] = set
	}
	if len(set) < maxLoaded {
		set[id] = true
	}
}

func (l *loadedSkills) get(executionID string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for k := range l.m[executionID] {
		out[k] = true
	}
	return out
}

func (l *loadedSkills) forget(executionIDs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range executionIDs {
		delete(l.m, id)
	}
}
