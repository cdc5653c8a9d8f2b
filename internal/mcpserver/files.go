package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/cursor"
	"github.com/devspace-dev/devspace/internal/executions"
	"github.com/devspace-dev/devspace/internal/files"
	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/project"
	"github.com/devspace-dev/devspace/internal/rootlock"
	"github.com/devspace-dev/devspace/internal/skills"
)

// ---- read_files ----

type readFilesIn struct {
	Files          []files.Request `json:"files" jsonschema:"1-8 files: path (Project-relative, or skill://<skillId>/<file> after loading a skill), offset (0-based first line) and limit (lines, default 400, max 2000)"`
	AllowSensitive bool            `json:"allowSensitive,omitempty" jsonschema:"read files that look like secrets (.env, private keys); only when the user asked for it"`
}

func (in *readFilesIn) validate() error {
	if len(in.Files) == 0 || len(in.Files) > 8 {
		return invalidInput("files must list 1 to 8 files")
	}
	return nil
}

func (readFilesIn) schema(s *jsonschema.Schema) {
	item := s.Properties["files"].Items
	item.Properties["offset"].Minimum = jsonschema.Ptr(0.0)
	item.Properties["limit"].Minimum = jsonschema.Ptr(0.0)
}

type readFilesOut struct {
	Files             []files.Item           `json:"files"`
	InstructionsDelta []executions.DeltaFile `json:"instructionsDelta,omitempty"`
}

func (o readFilesOut) summary() string {
	failed := 0
	for _, f := range o.Files {
		if f.Error != nil {
			failed++
		}
	}
	msg := fmt.Sprintf("Read %d file(s)", len(o.Files)-failed)
	if failed > 0 {
		msg += fmt.Sprintf("; %d could not be read", failed)
	}
	if len(o.InstructionsDelta) > 0 {
		msg += "; new instructions apply to these paths (see instructionsDelta, untrusted repository text)"
	}
	return msg + "."
}

// ---- skills ----

type skillsIn struct {
	Query   string `json:"query,omitempty" jsonschema:"words to look for in skill names and descriptions (empty lists all)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"nextCursor of an earlier search"`
	SkillID string `json:"skillId,omitempty" jsonschema:"load this skill (its instructions and support files)"`
}

func (in *skillsIn) validate() error {
	if in.SkillID != "" && (in.Query != "" || in.Cursor != "") {
		return invalidInput("pass skillId alone to load a skill, or query/cursor to search")
	}
	return nil
}

type skillsOut struct {
	Skills     []skills.Skill `json:"skills,omitempty"`
	NextCursor string         `json:"nextCursor,omitempty"`
	Loaded     *skills.Loaded `json:"loaded,omitempty"`
	SupportURI string         `json:"supportUriPrefix,omitempty"`
}

func (o skillsOut) summary() string {
	if o.Loaded != nil {
		return fmt.Sprintf("Loaded skill %s (%s); its body is %s text.", o.Loaded.Name, o.Loaded.Trust, o.Loaded.Trust)
	}
	return fmt.Sprintf("Found %d skill(s).", len(o.Skills))
}

// loadedSkills remembers, per execution, which skills were loaded (their
// support files become readable). Kept in memory: after a restart a skill
// is simply loaded again. Bounded per execution.
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
	if len(set) < 256 {
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

func registerFileTools(s *Server) {
	addTool(s, spec{
		name:  "read_files",
		title: "Read files",
		description: "Use when you need the content of 1-8 Project files, or a window of lines from a long file (offset/limit; follow nextOffset). " +
			"Avoid reading whole large files when a window or inspect grep would do, and avoid secret files unless the user asked. " +
			"Returns each file's lines, totalLines and version (pass version.contentHash as ifMatch to apply_patch), per-file errors, and instructionsDelta when nested AGENTS.md files apply.",
		scopes: []string{oauth.ScopeRead},
		hints:  hints{readOnly: true, idempotent: true},
	}, s.readFiles)
	addTool(s, spec{
		name:  "skills",
		title: "Find and load skills",
		description: "Use when a task may have a prepared skill (instructions plus support files): search by words, continue with nextCursor, then load one by skillId. " +
			"Avoid loading skills that do not match the task. " +
			"Returns skill names, descriptions and trust, or the loaded skill's body and support files (read them with read_files skill://<skillId>/<file>).",
		scopes: []string{oauth.ScopeRead},
		hints:  hints{readOnly: true, idempotent: true},
	}, s.skillsTool)
}

func (s *Server) readFiles(ctx context.Context, c *call, in *readFilesIn) (readFilesOut, error) {
	w, err := s.openWorkspace(ctx, c, rootlock.Read)
	if err != nil {
		return readFilesOut{}, err
	}
	defer w.close()
	out := readFilesOut{Files: make([]files.Item, len(in.Files))}
	var projectReqs []files.Request
	var projectIdx []int
	for i, req := range in.Files {
		if strings.HasPrefix(req.Path, skills.URIScheme) {
			out.Files[i] = s.readSkillFile(ctx, w, req, in.AllowSensitive)
			continue
		}
		projectReqs = append(projectReqs, req)
		projectIdx = append(projectIdx, i)
	}
	if len(projectReqs) > 0 {
		items, err := s.files.Read(ctx, w.Root, projectReqs, in.AllowSensitive)
		if err != nil {
			return readFilesOut{}, err
		}
		var paths []string
		for j, it := range items {
			out.Files[projectIdx[j]] = it
			if it.Error == nil {
				paths = append(paths, it.Path)
			} else if it.Error.DenyReason != "" {
				s.opts.Metrics.PathDenials.WithLabelValues(it.Error.DenyReason).Inc()
			}
		}
		if out.InstructionsDelta, err = s.opts.Bindings.InstructionsDelta(ctx, w.exec, w.Root, paths); err != nil {
			return readFilesOut{}, err
		}
	}
	return out, nil
}

// readSkillFile reads a skill:// support file of a skill loaded in this
// execution, through the skill directory's own root.
func (s *Server) readSkillFile(ctx context.Context, w *workspace, req files.Request, allowSensitive bool) files.Item {
	sr, rel, err := s.skills.OpenSupport(ctx, w.Root, req.Path, s.loaded.get(w.exec.ID))
	if err != nil {
		code, msg := files.CodeNotFound, "no such skill file"
		switch {
		case errors.Is(err, skills.ErrNotLoaded):
			code, msg = files.CodeSkillNotLoaded, "load the skill with the skills tool first"
		case errors.Is(err, project.ErrPathDenied):
			code, msg = files.CodePathDenied, "that path is outside the skill"
		}
		return files.Item{Path: req.Path, Error: &files.ItemError{Code: code, Message: msg}}
	}
	defer sr.Close()
	items, err := s.files.Read(ctx, sr, []files.Request{{Path: rel, Offset: req.Offset, Limit: req.Limit}}, allowSensitive)
	if err != nil || len(items) != 1 {
		return files.Item{Path: req.Path, Error: &files.ItemError{Code: files.CodeUnreadable, Message: "the skill file could not be read"}}
	}
	items[0].Path = req.Path
	return items[0]
}

func (s *Server) skillsTool(ctx context.Context, c *call, in *skillsIn) (skillsOut, error) {
	w, err := s.openWorkspace(ctx, c, rootlock.Read)
	if err != nil {
		return skillsOut{}, err
	}
	defer w.close()
	if in.SkillID != "" {
		loaded, err := s.skills.Load(ctx, w.Root, in.SkillID)
		if err != nil {
			if errors.Is(err, skills.ErrNotFound) || errors.Is(err, skills.ErrInvalid) {
				return skillsOut{}, toolErr("skill_not_found", "No loadable skill with that skillId; search again.", "skills")
			}
			return skillsOut{}, err
		}
		s.loaded.add(w.exec.ID, loaded.ID)
		return skillsOut{Loaded: loaded, SupportURI: skills.URI(loaded.ID, "")}, nil
	}
	query, offset := in.Query, 0
	sum := sha256.Sum256([]byte(query))
	qh := hex.EncodeToString(sum[:8])
	if in.Cursor != "" {
		claims, err := s.opts.Bindings.DecodeCursor(w.handle, in.Cursor, "skills")
		if err != nil {
			return skillsOut{}, err
		}
		if claims.QueryHash != qh {
			return skillsOut{}, toolErr("cursor_invalid", "That cursor belongs to another query: repeat the same query with it.")
		}
		offset = int(claims.Offset)
	}
	items, next, done, err := s.skills.Search(ctx, w.Root, query, offset, skills.DefaultSearchLimit)
	if err != nil {
		if errors.Is(err, skills.ErrBadQuery) {
			return skillsOut{}, invalidInput("%v", err)
		}
		return skillsOut{}, err
	}
	out := skillsOut{Skills: items}
	if !done {
		out.NextCursor, err = s.opts.Bindings.EncodeCursor(w.handle, cursor.Claims{Kind: "skills", QueryHash: qh, Offset: int64(next)})
		if err != nil {
			return skillsOut{}, err
		}
	}
	return out, nil
}
