// Package project knows the owner's approved Project roots: their stable
// projectRefs, labels and canonical paths. A projectRef is a selector, never
// a credential: knowing one grants nothing without a grant that lists it.
package project

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
)

// RefPrefix starts every projectRef.
const RefPrefix = "prj_"

// Root is one approved Project root.
type Root struct {
	Ref   string // "prj_" + base64url(HMAC(key, canonical path)); stable across restarts
	Label string
	Path  string // canonical absolute host path; never shown to a client
	// Source is the Project's own root when Path is a managed worktree of
	// it ("" otherwise); never shown to a client.
	Source string
}

// Catalog is the immutable set of approved roots, in configuration order.
// It is safe for concurrent use.
type Catalog struct {
	roots []Root
	byRef map[string]int
}

// Spec is one configured root before refs are derived.
type Spec struct {
	Label string
	Path  string
}

// NewCatalog derives refs for specs with key (the "project-ref" purpose key).
func NewCatalog(key []byte, specs []Spec) (*Catalog, error) {
	c := &Catalog{byRef: make(map[string]int, len(specs))}
	for _, s := range specs {
		ref := Ref(key, s.Path)
		if _, dup := c.byRef[ref]; dup {
			return nil, fmt.Errorf("project %q is configured twice", s.Label)
		}
		c.byRef[ref] = len(c.roots)
		c.roots = append(c.roots, Root{Ref: ref, Label: s.Label, Path: s.Path})
	}
	return c, nil
}

// Ref derives the projectRef of a canonical root path.
func Ref(key []byte, canonicalPath string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("project-ref\x00"))
	m.Write([]byte(canonicalPath))
	return RefPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// Roots returns a copy of all roots in configuration order.
func (c *Catalog) Roots() []Root {
	return append([]Root(nil), c.roots...)
}

// Lookup returns the root with that ref; ok is false when none matches.
func (c *Catalog) Lookup(ref string) (Root, bool) {
	i, ok := c.byRef[ref]
	if !ok {
		return Root{}, false
	}
	return c.roots[i], true
}

// Len returns the number of roots.
func (c *Catalog) Len() int { return len(c.roots) }

// CheckAccessible reports, per ref, whether the root is still an accessible
// directory. /readyz uses it; it never exposes paths.
func (c *Catalog) CheckAccessible() map[string]bool {
	out := make(map[string]bool, len(c.roots))
	for _, r := range c.roots {
		fi, err := os.Stat(r.Path)
		out[r.Ref] = err == nil && fi.IsDir()
	}
	return out
}
