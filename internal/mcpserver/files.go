package mcpserver

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/devspace-dev/devspace/internal/oauth"
	"github.com/devspace-dev/devspace/internal/reads"
)

// ---- read_files ----

type readFilesIn struct {
	Files          []reads.FileRequest `json:"files" jsonschema:"1-8 files: path (Project-relative, or skill://<skillId>/<file> after loading a skill), offset (0-based first line) and limit (lines, default 400, max 2000)"`
	AllowSensitive bool                `json:"allowSensitive,omitempty" jsonschema:"read files that look like secrets (.env, private keys); only when the user asked for it"`
}

func (readFilesIn) schema(s *jsonschema.Schema) {
	s.Properties["files"].MinItems = jsonschema.Ptr(1)
	s.Properties["files"].MaxItems = jsonschema.Ptr(reads.MaxFiles)
	item := s.Properties["files"].Items
	item.Properties["offset"].Minimum = jsonschema.Ptr(0.0)
	item.Properties["limit"].Minimum = jsonschema.Ptr(0.0)
}

type readFilesOut reads.Files

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
	Skills     []reads.Skill      `json:"skills,omitempty"`
	NextCursor string             `json:"nextCursor,omitempty"`
	Loaded     *reads.LoadedSkill `json:"loaded,omitempty"`
	SupportURI string             `json:"supportUriPrefix,omitempty"`
}

func (o skillsOut) summary() string {
	if o.Loaded != nil {
		return fmt.Sprintf("Loaded skill %s (%s); its body is %s text.", o.Loaded.Name, o.Loaded.Trust, o.Loaded.Trust)
	}
	return fmt.Sprintf("Found %d skill(s).", len(o.Skills))
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
	x, err := s.execution(ctx, c)
	if err != nil {
		return readFilesOut{}, err
	}
	defer x.Release()
	out, err := s.opts.Reads.ReadFiles(ctx, x, in.Files, in.AllowSensitive)
	if err != nil {
		return readFilesOut{}, err
	}
	return readFilesOut(*out), nil
}

func (s *Server) skillsTool(ctx context.Context, c *call, in *skillsIn) (skillsOut, error) {
	x, err := s.execution(ctx, c)
	if err != nil {
		return skillsOut{}, err
	}
	defer x.Release()
	out, err := s.opts.Reads.Skills(ctx, x, reads.SkillsRequest{Query: in.Query, Cursor: in.Cursor, SkillID: in.SkillID})
	if err != nil {
		return skillsOut{}, err
	}
	return skillsOut{Skills: out.Skills, NextCursor: out.NextCursor, Loaded: out.Loaded, SupportURI: out.SupportURI}, nil
}
