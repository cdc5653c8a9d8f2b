// Package store owns DevSpace's durable state: one SQLite database opened
// through gorm and the glebarez pure-Go driver. Every other package reaches
// the database only through the ctx-first methods defined here; gorm types
// never leave the package.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// ErrNotFound is returned by lookups that match no row. Callers test it with
// errors.Is; it is never wrapped into a client-visible message.
var ErrNotFound = errors.New("not found")

// FileName is the database file inside the state directory.
const FileName = "devspace.db"

// Store wraps the database. It is safe for concurrent use; SQLite serialises
// writers and the DSN asks for BEGIN IMMEDIATE so read-modify-write
// transactions wait on the busy timeout instead of failing with SQLITE_BUSY.
type Store struct {
	db   *gorm.DB
	now  func() time.Time
	gen  *generations // AuthGeneration, WriteGeneration; nil for a read-only Store
	lock *os.File     // the state directory's lock; nil for a read-only Store
	// reserve is the state directory's disk reserve (reserve.go); nil for
	// a read-only Store.
	reserve *reserve
}

// Options tune Open. The zero value is the production default.
type Options struct {
	// BusyTimeout is how long a statement waits for a lock. Zero means 5s.
	BusyTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnStatement, when set, is called after every SQL statement the store
	// runs (not BEGIN or COMMIT), with the statement's text. Tests count
	// round trips with it; nil means no hook.
	OnStatement func(sql string)
}

// Open opens (creating if needed) STATE_DIR/devspace.db with WAL, a busy
// timeout and immediate transactions, pings it and applies pending
// migrations in order. The directory is created 0700 and the file made 0600.
// The Store holds the exclusive lock of the state directory (LockFileName)
// until Close: while another Store, in any process, has the directory open
// for writing, Open fails with ErrLocked (wrapped). OpenReadOnly takes no
// lock.
func Open(ctx context.Context, stateDir string, opts Options) (_ *Store, err error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	lock, err := lockState(stateDir)
	if err != nil {
		return nil, err
	}
	var sqlDB *sql.DB
	defer func() {
		if err != nil {
			if sqlDB != nil {
				sqlDB.Close()
			}
			lock.Close()
		}
	}()
	path := filepath.Join(stateDir, FileName)
	// Create the file ourselves so its mode is 0600 from the first byte.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database file: %w", err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("chmod database file: %w", err)
	}
	busy := opts.BusyTimeout
	if busy == 0 {
		busy = 5 * time.Second
	}
	// Note: _time_format must not be added: with it the driver ignores _txlock.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	sqlDB, err = sql.Open(sqlite.DriverName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	// SQLite serialises writers anyway; a bounded pool keeps descriptors and
	// memory flat under load (200 sessions opened ~200 connections).
	sqlDB.SetMaxOpenConns(16)
	sqlDB.SetMaxIdleConns(16)
	gen := new(generations)
	gen.any.Store(1) // 0 means read-only (WriteGeneration)
	db, err := gorm.Open(&sqlite.Dialector{DSN: dsn, Conn: &trackedPool{DB: sqlDB, gen: gen}}, &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("ping database: %w", err)
	}
	if err := trackWrites(db, gen); err != nil {
		return nil, err
	}
	if opts.OnStatement != nil {
		if err := observeStatements(db, opts.OnStatement); err != nil {
			return nil, err
		}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Store{db: db, now: func() time.Time { return now().UTC() }, gen: gen, lock: lock,
		reserve: &reserve{path: filepath.Join(stateDir, ReserveFile)}}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	s.reserve.restore() // best effort: a full disk at start leaves it for later
	// WAL side files inherit the process umask; tighten them too.
	for _, side := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Stat(side); err == nil {
			_ = os.Chmod(side, 0o600)
		}
	}
	return s, nil
}

// Close closes the database, then releases the state directory's lock.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err == nil {
		err = sqlDB.Close()
	}
	if s.lock != nil {
		// Closing the descriptor releases the flock.
		if cerr := s.lock.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Ping reports whether the database answers and accepts a write; /readyz
// uses it.
func (s *Store) Ping(ctx context.Context) error {
	return s.db.WithContext(ctx).Exec(
		`INSERT INTO ready_probe(id, n) VALUES(1, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1`).Error
}

// Now returns the store's clock reading (UTC).
func (s *Store) Now() time.Time { return s.now() }

// observeStatements registers fn after each of gorm's statement
// callbacks.
func observeStatements(db *gorm.DB, fn func(sql string)) error {
	after := func(tx *gorm.DB) { fn(tx.Statement.SQL.String()) }
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("devspace:statement", after),
		cb.Query().After("gorm:query").Register("devspace:statement", after),
		cb.Update().After("gorm:update").Register("devspace:statement", after),
		cb.Delete().After("gorm:delete").Register("devspace:statement", after),
		cb.Row().After("gorm:row").Register("devspace:statement", after),
		cb.Raw().After("gorm:raw").Register("devspace:statement", after),
	} {
		if err != nil {
			return fmt.Errorf("register statement hook: %w", err)
		}
	}
	return nil
}

func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}

// ErrNoDatabase is returned by OpenReadOnly when the state directory holds
// no database. This package owns it.
var ErrNoDatabase = errors.New("no database")

// OpenReadOnly opens the database of stateDir for reading only, for
// doctor and diagnostic: it creates, migrates and changes nothing (no
// directory, file, permission or schema), and fails with ErrNoDatabase
// (wrapped) when there is no database yet. Its writes fail. While a server
// has the database open, reading takes SQLite's shared-memory read locks
// in the -shm file (coordination, not content).
func OpenReadOnly(ctx context.Context, stateDir string) (*Store, error) {
	path := filepath.Join(stateDir, FileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s", ErrNoDatabase, stateDir)
		}
		return nil, fmt.Errorf("open database: %w", err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		// No write-ahead log: no server has the database open (it removes
		// the log when it closes). immutable keeps SQLite from creating
		// the -wal and -shm side files a WAL reader otherwise makes.
		q.Set("immutable", "1")
	}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "query_only(1)")
	db, err := gorm.Open(sqlite.Open("file:"+path+"?"+q.Encode()), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	sqlDB.SetMaxOpenConns(1)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return &Store{db: db, now: func() time.Time { return time.Now().UTC() }}, nil
}
