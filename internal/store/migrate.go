package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// migration is one schema step. Steps are applied in slice order, each in
// its own transaction, and recorded in schema_migrations; a version is never
// edited once released — later changes append a new step.
type migration struct {
	version int
	name    string
	sql     []string
}

// migrations is the ordered schema history.
var migrations = []migration{
	{1, "oauth and grants", []string{
		`CREATE TABLE settings (
			key TEXT PRIMARY KEY,
			value TEXT NOT NULL
		)`,
		`CREATE TABLE oauth_clients (
			id TEXT PRIMARY KEY,
			secret_hash TEXT NOT NULL DEFAULT '',
			name TEXT NOT NULL DEFAULT '',
			redirect_uris TEXT NOT NULL,
			auth_method TEXT NOT NULL,
			metadata_document INTEGER NOT NULL DEFAULT 0,
			created_at DATETIME NOT NULL,
			used_at DATETIME
		)`,
		`CREATE INDEX oauth_clients_unused ON oauth_clients(used_at, created_at)`,
		`CREATE TABLE grants (
			id TEXT PRIMARY KEY,
			client_id TEXT NOT NULL,
			client_name TEXT NOT NULL DEFAULT '',
			scopes TEXT NOT NULL,
			project_ids TEXT NOT NULL,
			epoch INTEGER NOT NULL DEFAULT 1,
			global_epoch INTEGER NOT NULL,
			created_at DATETIME NOT NULL,
			expires_at DATETIME,
			revoked_at DATETIME,
			revoke_reason TEXT NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX grants_client ON grants(client_id)`,
		`CREATE TABLE oauth_tokens (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
			client_id TEXT NOT NULL,
			parent_id INTEGER,
			scope TEXT NOT NULL DEFAULT '',
			redirect_uri TEXT NOT NULL DEFAULT '',
			resource TEXT NOT NULL DEFAULT '',
			code_hash TEXT UNIQUE,
			code_challenge TEXT NOT NULL DEFAULT '',
			code_challenge_method TEXT NOT NULL DEFAULT '',
			code_created_at DATETIME,
			code_expires_at DATETIME,
			code_consumed_at DATETIME,
			access_hash TEXT UNIQUE,
			access_created_at DATETIME,
			access_expires_at DATETIME,
			access_revoked_at DATETIME,
			refresh_hash TEXT UNIQUE,
			refresh_created_at DATETIME,
			refresh_expires_at DATETIME,
			refresh_consumed_at DATETIME,
			revoked_at DATETIME
		)`,
		`CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id)`,
		`CREATE TABLE audit_events (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			at DATETIME NOT NULL,
			kind TEXT NOT NULL,
			grant_ref TEXT NOT NULL DEFAULT '',
			client_ref TEXT NOT NULL DEFAULT '',
			detail TEXT NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX audit_events_at ON audit_events(at)`,
		`INSERT INTO settings(key, value) VALUES ('global_epoch', '1')`,
	}},
	{2, "operations", []string{
		// One row per (grant, execution, tool, operationId). execution_id is
		// '' for operations that create an execution (project_control open).
		`CREATE TABLE operations (
			grant_id TEXT NOT NULL,
			execution_id TEXT NOT NULL DEFAULT '',
			tool TEXT NOT NULL,
			operation_id BLOB NOT NULL,
			request_hash TEXT NOT NULL,
			state TEXT NOT NULL,
			result BLOB,
			created_at DATETIME NOT NULL,
			completed_at DATETIME,
			expires_at DATETIME NOT NULL,
			PRIMARY KEY (grant_id, execution_id, tool, operation_id)
		)`,
		`CREATE INDEX operations_expires ON operations(expires_at)`,
	}},
	{3, "executions and bindings", []string{
		`CREATE TABLE executions (
			id TEXT PRIMARY KEY,
			grant_id TEXT NOT NULL,
			client_id TEXT NOT NULL,
			project_ref TEXT NOT NULL,
			root_fingerprint TEXT NOT NULL,
			grant_epoch INTEGER NOT NULL,
			global_epoch INTEGER NOT NULL,
			scopes TEXT NOT NULL,
			session_ref TEXT NOT NULL,
			actor_ref TEXT NOT NULL,
			instructions_revision TEXT NOT NULL DEFAULT '',
			instructions_pending INTEGER NOT NULL DEFAULT 0,
			created_at DATETIME NOT NULL,
			closed_at DATETIME,
			close_reason TEXT NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX executions_grant ON executions(grant_id)`,
		// The binding of a host session+Actor under one grant to its current
		// execution. A new open replaces it; the execution row stays.
		`CREATE TABLE bindings (
			grant_id TEXT NOT NULL,
			session_ref TEXT NOT NULL,
			actor_ref TEXT NOT NULL,
			execution_id TEXT NOT NULL REFERENCES executions(id),
			updated_at DATETIME NOT NULL,
			PRIMARY KEY (grant_id, session_ref, actor_ref)
		)`,
	}},
	{4, "delivered nested instructions", []string{
		// Nested instruction files (AGENTS.md below the root) already shown to
		// an execution, by path and content hash: a changed file is new.
		`CREATE TABLE delivered_instructions (
			execution_id TEXT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
			path TEXT NOT NULL,
			hash TEXT NOT NULL,
			delivered_at DATETIME NOT NULL,
			PRIMARY KEY (execution_id, path, hash)
		)`,
	}},
	{5, "saved tasks", []string{
		// A saved Task belongs to a Project (by projectRef, stable across
		// restarts and grants), not to a grant: any grant that currently
		// authorizes the Project may list and resume it.
		`CREATE TABLE tasks (
			task_ref TEXT PRIMARY KEY,
			project_ref TEXT NOT NULL,
			title TEXT NOT NULL DEFAULT '',
			progress TEXT NOT NULL DEFAULT '',
			status TEXT NOT NULL,
			revision INTEGER NOT NULL,
			active_execution_id TEXT NOT NULL DEFAULT '',
			created_at DATETIME NOT NULL,
			updated_at DATETIME NOT NULL,
			completed_at DATETIME
		)`,
		`CREATE INDEX tasks_project ON tasks(project_ref, status, updated_at)`,
		`ALTER TABLE executions ADD COLUMN task_ref TEXT NOT NULL DEFAULT ''`,
	}},
	{6, "threads", []string{
		// One Thread per execution (the mapping is written once: execution_id
		// is UNIQUE and never updated), private to the grant's Actor.
		`CREATE TABLE threads (
			thread_ref TEXT PRIMARY KEY,
			execution_id TEXT NOT NULL UNIQUE REFERENCES executions(id),
			grant_id TEXT NOT NULL,
			actor_ref TEXT NOT NULL,
			project_ref TEXT NOT NULL,
			status TEXT NOT NULL,
			revision INTEGER NOT NULL,
			created_at DATETIME NOT NULL,
			updated_at DATETIME NOT NULL
		)`,
		`CREATE INDEX threads_owner ON threads(grant_id, actor_ref, updated_at)`,
		`CREATE TABLE thread_activity (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			thread_ref TEXT NOT NULL REFERENCES threads(thread_ref) ON DELETE CASCADE,
			kind TEXT NOT NULL,
			data TEXT NOT NULL DEFAULT '{}',
			at DATETIME NOT NULL
		)`,
		`CREATE INDEX thread_activity_thread ON thread_activity(thread_ref, id)`,
	}},
	{7, "patch journal", []string{
		// Successful apply_patch operations of an execution, for
		// show_changes{apply_patch_history} (and undo later).
		`CREATE TABLE patch_journal (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			execution_id TEXT NOT NULL REFERENCES executions(id) ON DELETE CASCADE,
			files TEXT NOT NULL,
			diff TEXT NOT NULL,
			bytes INTEGER NOT NULL,
			created_at DATETIME NOT NULL
		)`,
		`CREATE INDEX patch_journal_execution ON patch_journal(execution_id, id)`,
	}},
	{8, "managed worktrees", []string{
		`ALTER TABLE executions ADD COLUMN worktree_path TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE executions ADD COLUMN worktree_base TEXT NOT NULL DEFAULT ''`,
	}},
	{9, "retained command output", []string{
		// One row per command started through exec_command: what binds its
		// refs, its final state, and where its spool file is. The output
		// itself stays in the file; only the last bytes of a truncated
		// output (which exist nowhere else) are kept here.
		`CREATE TABLE process_outputs (
			output_ref TEXT PRIMARY KEY,
			process_ref TEXT NOT NULL UNIQUE,
			spool_id TEXT NOT NULL,
			grant_id TEXT NOT NULL,
			execution_id TEXT NOT NULL,
			project_ref TEXT NOT NULL,
			status TEXT NOT NULL,
			exit_code INTEGER,
			signal TEXT NOT NULL DEFAULT '',
			kill_reason TEXT NOT NULL DEFAULT '',
			revision INTEGER NOT NULL DEFAULT 0,
			output_bytes INTEGER NOT NULL DEFAULT 0,
			retained_bytes INTEGER NOT NULL DEFAULT 0,
			truncated INTEGER NOT NULL DEFAULT 0,
			tail BLOB,
			started_at DATETIME NOT NULL,
			ended_at DATETIME,
			expires_at DATETIME
		)`,
		`CREATE INDEX process_outputs_execution ON process_outputs(execution_id)`,
		`CREATE INDEX process_outputs_expires ON process_outputs(expires_at)`,
	}},
	{10, "patch journal room from the index", []string{
		// JournalRoom counts and sums an execution's entries before every
		// patch. Without bytes in the index SQLite reads each row, and
		// bytes comes after the diff, so it walked every diff's overflow
		// pages (12 ms at ten 500 KiB entries). The index answers alone.
		`DROP INDEX patch_journal_execution`,
		`CREATE INDEX patch_journal_execution ON patch_journal(execution_id, id, bytes)`,
	}},
	{11, "readiness probe row", []string{
		// /readyz proves the database takes writes. It wrote a settings
		// row, and settings (where the global epoch lives) is an auth
		// table: every probe emptied the bearer-token cache.
		`CREATE TABLE ready_probe (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
		`DELETE FROM settings WHERE key = 'ready_probe'`,
	}},
	{12, "patch journal kinds", []string{
		// The Owner's console lists the latest patches and undos of every
		// execution (RecentJournal). The kind says which an entry is;
		// older entries have none. The index lists them newest first by
		// kind without reading a row, and holds what an undo's listing
		// needs beyond the file list: columns after the diff cost a walk
		// of its overflow pages (migration 10).
		`ALTER TABLE patch_journal ADD COLUMN kind TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX patch_journal_kind ON patch_journal(kind, id, execution_id, created_at, bytes)`,
	}},
}

func (s *Store) migrate(ctx context.Context) error {
	db := s.db.WithContext(ctx)
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_at DATETIME NOT NULL
	)`).Error; err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var current int
	if err := db.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error; err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if latest := migrations[len(migrations)-1].version; current > latest {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary (%d)", current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		err := db.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range m.sql {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return tx.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.now()).Error
		})
		if err != nil {
			return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v).Error
	return v, err
}
