package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"gorm.io/gorm"
)

// authTables are the tables bearer verification reads (tokenGrant): a
// write to any of them may revoke, expire or change a token. No table
// outside this set cascades into them (oauth_tokens cascades from grants
// only). Keep the set in step with tokenGrant's query.
var authTables = map[string]bool{
	tokenRow{}.TableName(): true,
	grantRow{}.TableName(): true,
	"settings":             true, // global_epoch
}

// errRowWrite is what a write run through Row, Rows or a Raw Scan gets:
// such a statement commits only when the caller closes its rows, after
// every callback has run, so its commit could not be counted.
var errRowWrite = errors.New("store: a write must run through Exec, Create, Update or Delete")

// AuthGeneration returns a counter that grows after each committed write
// through this Store that may have changed a token, a grant or the global
// epoch (conservatively, any statement whose target table is not known to
// be another one). A value read before reading those rows that is still
// current later proves the rows read are still current, as far as writes
// through this Store go; Open's lock makes this Store the only writer.
// A read-only Store, which cannot write, always returns 0. It is safe for
// concurrent use and costs one atomic load.
func (s *Store) AuthGeneration() uint64 {
	if s.gen == nil {
		return 0
	}
	return s.gen.auth.Load()
}

// WriteGeneration is AuthGeneration for every table: a counter that grows
// after each committed write through this Store, whatever it wrote. A
// value read before a read that is still current later proves that
// nothing the read saw has changed since. A read-only Store returns 0.
func (s *Store) WriteGeneration() uint64 {
	if s.gen == nil {
		return 0
	}
	return s.gen.any.Load()
}

// generations are the counters behind AuthGeneration and WriteGeneration.
type generations struct {
	auth, any atomic.Uint64
}

// trackWrites registers the callbacks that advance gen.any after every
// statement that may write, and gen.auth after every one that may write an
// auth table: gorm's Create, Update and Delete (whose table it knows),
// Exec and Raw queries (whose SQL is classified by isRead and
// touchesAuth). Outside a transaction the statement has committed when the
// callback runs; inside one the transaction is marked and its Commit
// advances the counters (trackedTx). Writes through Row are refused
// (errRowWrite). Every statement the Store runs passes through these
// callbacks, so a new write path cannot be forgotten.
func trackWrites(db *gorm.DB, gen *generations) error {
	wrote := func(tx *gorm.DB, auth bool) {
		if t, ok := tx.Statement.ConnPool.(*trackedTx); ok {
			t.wroteAny.Store(true)
			if auth {
				t.wroteAuth.Store(true)
			}
			return
		}
		if auth {
			gen.auth.Add(1)
		}
		gen.any.Add(1)
	}
	byTable := func(tx *gorm.DB) {
		table := tx.Statement.Table
		wrote(tx, table == "" || authTables[strings.ToLower(table)])
	}
	bySQL := func(tx *gorm.DB) {
		if q := tx.Statement.SQL.String(); !isRead(q) {
			wrote(tx, touchesAuth(q))
		}
	}
	refuseWrite := func(tx *gorm.DB) {
		// gorm builds an empty statement's SQL (a SELECT) in gorm:row.
		if q := tx.Statement.SQL.String(); q != "" && !isRead(q) {
			tx.AddError(errRowWrite)
		}
	}
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("devspace:auth_generation", byTable),
		cb.Update().After("gorm:update").Register("devspace:auth_generation", byTable),
		cb.Delete().After("gorm:delete").Register("devspace:auth_generation", byTable),
		cb.Raw().After("gorm:raw").Register("devspace:auth_generation", bySQL),
		cb.Query().After("gorm:query").Register("devspace:auth_generation", bySQL),
		cb.Row().Before("gorm:row").Register("devspace:row_read_only", refuseWrite),
	} {
		if err != nil {
			return fmt.Errorf("register auth write hook: %w", err)
		}
	}
	return nil
}

// isRead reports whether a statement is a SELECT or an EXPLAIN, neither of
// which can write in SQLite.
func isRead(query string) bool {
	verb, _ := nextWord(query)
	return strings.EqualFold(verb, "SELECT") || strings.EqualFold(verb, "EXPLAIN")
}

// touchesAuth reports whether a statement may write an auth table. It is
// false only for reads (isRead) and for INSERT, REPLACE, UPDATE and DELETE
// statements whose target table is named and is not an auth table;
// anything else (DDL, WITH, SAVEPOINT, a leading comment, a name it cannot
// read) counts as a write.
func touchesAuth(query string) bool {
	if isRead(query) {
		return false
	}
	verb, rest := nextWord(query)
	switch strings.ToUpper(verb) {
	case "INSERT", "REPLACE":
		rest = after(rest, "INTO")
	case "UPDATE":
		if w, r := nextWord(rest); strings.EqualFold(w, "OR") {
			_, rest = nextWord(r) // UPDATE OR <conflict action> table
		}
	case "DELETE":
		rest = after(rest, "FROM")
	default:
		return true
	}
	table, _ := nextWord(rest)
	table = strings.Trim(table, "`\"[]")
	if i := strings.LastIndexByte(table, '.'); i >= 0 {
		table = strings.Trim(table[i+1:], "`\"[]") // schema.table
	}
	return table == "" || authTables[strings.ToLower(table)]
}

// nextWord splits off the first word of s: leading white space skipped,
// ended by white space or an opening parenthesis.
func nextWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t\r\n")
	end := strings.IndexAny(s, " \t\r\n(")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

// after returns what follows the word kw in s, or "" when kw is absent.
func after(s, kw string) string {
	for s != "" {
		var w string
		w, s = nextWord(s)
		if w == "" {
			return ""
		}
		if strings.EqualFold(w, kw) {
			return s
		}
	}
	return ""
}

// trackedPool is the Store's gorm connection pool: the database, with
// transactions that know whether they wrote, and whether an auth table.
type trackedPool struct {
	*sql.DB
	gen *generations
}

// BeginTx starts a tracked transaction (gorm.ConnPoolBeginner).
func (p *trackedPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	tx, err := p.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &trackedTx{Tx: tx, db: p.DB, gen: p.gen}, nil
}

// GetDBConn returns the database (gorm.GetDBConnector), for gorm.DB.DB.
func (p *trackedPool) GetDBConn() (*sql.DB, error) { return p.DB, nil }

// trackedTx is a transaction whose Commit advances the generations its
// statements may have changed. Advancing after the commit, not at the
// statement, is what keeps a reader from caching rows read before the
// commit under the new generation.
type trackedTx struct {
	*sql.Tx
	db                  *sql.DB
	gen                 *generations
	wroteAny, wroteAuth atomic.Bool
}

// Commit commits and then advances the generations the transaction may
// have changed (also when the commit failed: the outcome is then
// unknown).
func (t *trackedTx) Commit() error {
	err := t.Tx.Commit()
	if t.wroteAuth.Load() {
		t.gen.auth.Add(1)
	}
	if t.wroteAny.Load() {
		t.gen.any.Add(1)
	}
	return err
}

// GetDBConn returns the transaction's database (gorm.GetDBConnector).
func (t *trackedTx) GetDBConn() (*sql.DB, error) { return t.db, nil }
