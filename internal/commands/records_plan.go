package commands

import (
	"cmp"
	"slices"

	"github.com/devspace-dev/devspace/internal/store"
)

// plan is what one sweep retires for the bounds: each grant's ended
// outputs, earliest ended first, and what each grant and the spool hold
// as the planned retirements take it away. Only ended output is ever
// taken; a running command's bytes count in what its grant holds.
type plan struct {
	grants map[string]*grantOutputs
	total  int64               // spool bytes, running commands' included
	gone   map[string]bool     // output refs taken
	refs   map[string][]string // output refs taken, by reason
}

// grantOutputs is one grant's part of a plan.
type grantOutputs struct {
	id      string
	bytes   int64 // in the spool (the manager's count)
	records int
	// ended and withBytes are its ended records, earliest ended first:
	// all of them, and those whose file holds bytes. Taken ones are
	// skipped (plan.gone).
	ended, withBytes []*store.OutputUse
}

// newPlan groups recs (store.OutputUses: earliest ended first) by grant;
// held and total are the spool's counts.
func newPlan(recs []store.OutputUse, held map[string]int64, total int64) *plan {
	p := &plan{grants: map[string]*grantOutputs{}, total: total, gone: map[string]bool{}, refs: map[string][]string{}}
	grant := func(id string) *grantOutputs {
		g := p.grants[id]
		if g == nil {
			g = &grantOutputs{id: id, bytes: held[id]}
			p.grants[id] = g
		}
		return g
	}
	for id := range held {
		grant(id)
	}
	for i := range recs {
		rec := &recs[i]
		g := grant(rec.GrantID)
		g.records++
		if !rec.Ended {
			continue
		}
		g.ended = append(g.ended, rec)
		if rec.RetainedBytes > 0 {
			g.withBytes = append(g.withBytes, rec)
		}
	}
	return p
}

// front drops taken records from the head of q and returns its first
// record, nil when none is left.
func (p *plan) front(q *[]*store.OutputUse) *store.OutputUse {
	for len(*q) > 0 && p.gone[(*q)[0].OutputRef] {
		*q = (*q)[1:]
	}
	if len(*q) == 0 {
		return nil
	}
	return (*q)[0]
}

// take plans retiring g's earliest ended output (with withBytes, the
// earliest whose file holds bytes) for reason. It reports false when g
// is nil or has none.
func (p *plan) take(g *grantOutputs, reason string, withBytes bool) bool {
	if g == nil {
		return false
	}
	q := &g.ended
	if withBytes {
		q = &g.withBytes
	}
	rec := p.front(q)
	if rec == nil {
		return false
	}
	p.gone[rec.OutputRef] = true
	p.refs[reason] = append(p.refs[reason], rec.OutputRef)
	g.records--
	g.bytes -= rec.RetainedBytes
	p.total -= rec.RetainedBytes
	return true
}

// byID returns the grants in a fixed order.
func (p *plan) byID() []*grantOutputs {
	gs := make([]*grantOutputs, 0, len(p.grants))
	for _, g := range p.grants {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b *grantOutputs) int { return cmp.Compare(a.id, b.id) })
	return gs
}

// most returns, among the grants that have a record in the queue q
// chooses, the one with the largest weight (ties: the smaller ID); nil
// when there is none.
func (p *plan) most(q func(*grantOutputs) *[]*store.OutputUse, weight func(*grantOutputs) int64) *grantOutputs {
	var best *grantOutputs
	for _, g := range p.byID() {
		if p.front(q(g)) == nil {
			continue
		}
		if best == nil || weight(g) > weight(best) {
			best = g
		}
	}
	return best
}

// mostRecords is the grant the record bound takes from next: the one
// holding the most records among those with an ended one.
func (p *plan) mostRecords() *grantOutputs {
	return p.most(func(g *grantOutputs) *[]*store.OutputUse { return &g.ended }, func(g *grantOutputs) int64 { return int64(g.records) })
}

// heaviest is the grant the spool's total takes from next: the one
// holding the most among those with ended output. It is nil while any
// grant is over its share: after the share pass what such a grant holds
// over it is running commands' output, which is never retired, and the
// grants within their share do not pay for it. (Shares are equal, so
// the grant holding the most is the one most over its share.)
func (p *plan) heaviest(share int64) *grantOutputs {
	for _, g := range p.grants {
		if g.bytes > share {
			return nil
		}
	}
	return p.most(func(g *grantOutputs) *[]*store.OutputUse { return &g.withBytes }, func(g *grantOutputs) int64 { return g.bytes })
}
