package authstate

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// InitOptions configure Init. The zero value generates a password and a
// master key stored in auth.json, with DefaultParams, and refuses to
// overwrite an existing file.
type InitOptions struct {
	// Password is the Owner password, MinPasswordLen to MaxPasswordLen
	// bytes. Nil means generate one with GeneratePassword. Init does not
	// keep or modify the slice.
	Password []byte
	// MasterKeyFile, when set, names a file holding the master key (32 raw
	// bytes, 64 hex digits, or base64 of 32 bytes; a trailing newline is
	// allowed). The key is then not stored in auth.json; only a one-way
	// check value is, so Load can detect a different key file. Empty means
	// generate a key and store it in auth.json.
	MasterKeyFile string
	// Force overwrites an existing auth.json. The new file has a new
	// verifier and (unless MasterKeyFile is set) a new master key.
	Force bool
	// Params are the Argon2id parameters. Each zero field takes its value
	// from DefaultParams.
	Params Params
}

// Init creates stateDir (mode 0700) if it does not exist and writes
// STATE_DIR/auth.json atomically with mode 0600. An existing stateDir keeps
// its mode. It returns the password used, generated or given, so the
// caller can show it once; it never logs it.
//
// Init returns ErrExists if auth.json exists and opts.Force is false,
// ErrPasswordLength for a given password of the wrong length and
// ErrMasterKey for an unreadable or malformed master key file.
func Init(stateDir string, opts InitOptions) (password string, err error) {
	params := opts.Params.withDefaults()
	if err := params.validate(); err != nil {
		return "", fmt.Errorf("init auth state: %w", err)
	}
	pw := opts.Password
	if pw == nil {
		pw = []byte(GeneratePassword())
	}
	if err := checkPasswordLen(pw); err != nil {
		return "", fmt.Errorf("init auth state: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("create state dir: %w", err)
	}
	path := filepath.Join(stateDir, FileName)
	if !opts.Force {
		// Init is an owner-run command, so the window between this check
		// and the rename below is not worth a link-based exclusive create.
		_, err := os.Lstat(path)
		if err == nil {
			return "", fmt.Errorf("%w: %s (force an overwrite to replace it)", ErrExists, path)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("stat auth file: %w", err)
		}
	}

	f := &authFile{Version: formatVersion}
	if opts.MasterKeyFile != "" {
		key, err := readMasterKeyFile(opts.MasterKeyFile)
		if err != nil {
			return "", err
		}
		f.MasterKeyCheck = b64.EncodeToString(keyCheck(key))
		clear(key)
	} else {
		key, err := randomBytes(MasterKeyLen)
		if err != nil {
			return "", err
		}
		f.MasterKey = b64.EncodeToString(key)
		clear(key)
	}
	v, err := newVerifier(pw, params)
	if err != nil {
		return "", err
	}
	f.Password = encodeVerifier(v)
	if err := writeAuthFile(path, f); err != nil {
		return "", err
	}
	return string(pw), nil
}

func writeAuthFile(path string, f *authFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode auth file: %w", err)
	}
	data = append(data, '\n')
	defer clear(data)
	return writeFile(path, data)
}

// State is the loaded content of auth.json: the password verifier and the
// master key. It is safe for concurrent use. Printing a State with fmt (any
// verb) or logging it with slog shows only its path.
type State struct {
	path string
	key  []byte // master key; never changes after Load

	// sem bounds concurrent Argon2id hashes in VerifyPassword.
	sem chan struct{}
	// hashParams are the parameters SetPassword hashes with.
	hashParams Params
	// testHookHashing, when set, runs while a VerifyPassword holds a
	// semaphore slot, just before hashing.
	testHookHashing func()

	mu sync.RWMutex // guards v
	v  *verifier

	writeMu sync.Mutex // serializes SetPassword; guards file
	file    *authFile

	// releasing is set while a return of hash memory is scheduled.
	releasing atomic.Bool
}

// releaseDelay is how long after a hash its memory is given back to the
// system, so that a burst of logins pays for it once.
const releaseDelay = time.Second

// releaseHashMemory gives Argon2id's buffer (Params.Memory, 64 MiB by
// default) back to the system soon after a hash: the runtime would keep
// it as resident memory for minutes, which more than triples an idle
// server's footprint after each login.
func (s *State) releaseHashMemory() {
	if s.releasing.CompareAndSwap(false, true) {
		time.AfterFunc(releaseDelay, func() {
			s.releasing.Store(false)
			debug.FreeOSMemory()
		})
	}
}

// Load reads STATE_DIR/auth.json and, if masterKeyFile is not empty, the
// master key from that file.
//
// Load returns ErrNotInitialized if auth.json does not exist,
// ErrInsecureMode if its mode grants any access to group or others,
// ErrUnsupportedVersion for a format it does not know, ErrCorrupt for a
// malformed file, and ErrMasterKey when masterKeyFile is malformed, differs
// from the key auth.json was initialized with, is given although auth.json
// stores its own key, or is missing although auth.json was initialized
// with one. It never returns a nil State with a nil error.
func Load(stateDir, masterKeyFile string) (*State, error) {
	path := filepath.Join(stateDir, FileName)
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	f, v, err := decodeFile(data)
	clear(data)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	var key []byte
	switch {
	case f.MasterKey != "" && masterKeyFile != "":
		return nil, fmt.Errorf("%w: %s stores its own master key; unset the master key file or re-run init with it", ErrMasterKey, path)
	case f.MasterKey != "":
		key, err = b64.DecodeString(f.MasterKey)
		if err != nil || len(key) != MasterKeyLen {
			return nil, fmt.Errorf("load %s: %w: master key is not base64 of %d bytes", path, ErrCorrupt, MasterKeyLen)
		}
	case masterKeyFile == "":
		return nil, fmt.Errorf("%w: %s was initialized with a master key file; set the master key file", ErrMasterKey, path)
	default:
		key, err = readMasterKeyFile(masterKeyFile)
		if err != nil {
			return nil, err
		}
		want, err := b64.DecodeString(f.MasterKeyCheck)
		if err != nil || len(want) != keyCheckLen {
			return nil, fmt.Errorf("load %s: %w: masterKeyCheck is not base64 of %d bytes", path, ErrCorrupt, keyCheckLen)
		}
		if subtle.ConstantTimeCompare(keyCheck(key), want) != 1 {
			return nil, fmt.Errorf("%w: %s does not match the key %s was initialized with", ErrMasterKey, masterKeyFile, path)
		}
	}
	return &State{
		path:       path,
		key:        key,
		sem:        make(chan struct{}, max(runtime.NumCPU(), 1)),
		hashParams: DefaultParams(),
		v:          v,
		file:       f,
	}, nil
}

// VerifyPassword reports whether password matches the Owner password. The
// comparison is constant-time and uses the parameters stored with the
// verifier. At most runtime.NumCPU() hashes run at once across all callers;
// a caller waiting for a slot returns ctx.Err() (with false) when ctx ends.
// A password outside the accepted length range is rejected without
// hashing. The only errors are ctx's.
func (s *State) VerifyPassword(ctx context.Context, password []byte) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if checkPasswordLen(password) != nil {
		return false, nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-s.sem }()
	s.mu.RLock()
	v := s.v
	s.mu.RUnlock()
	if s.testHookHashing != nil {
		s.testHookHashing()
	}
	got := v.compute(password)
	s.releaseHashMemory()
	return subtle.ConstantTimeCompare(got, v.hash) == 1, nil
}

// SetPassword replaces the Owner password: it hashes password with the
// current DefaultParams and a new salt, makes the new verifier current,
// then rewrites auth.json atomically. The Owner rotates a password they
// fear is known, so the new one holds in this process first, also when the
// disk is full: a write that fails returns ErrNotWritten
// (wrapped) and leaves the old auth.json whole; Persist retries it. It
// returns ErrPasswordLength for a password of the wrong length, and then
// changes nothing. It does not change the master key, and it does not
// revoke anything: the caller bumps the global epoch.
func (s *State) SetPassword(password []byte) error {
	if err := checkPasswordLen(password); err != nil {
		return err
	}
	v, err := newVerifier(password, s.hashParams)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	next := *s.file
	next.Password = encodeVerifier(v)
	s.file = &next
	s.mu.Lock()
	s.v = v
	s.mu.Unlock()
	if err := writeAuthFile(s.path, &next); err != nil {
		return fmt.Errorf("%w: %w", ErrNotWritten, err)
	}
	return nil
}

// ErrNotWritten is returned (wrapped) by SetPassword when the new password
// holds in this process but auth.json could not be written (a full
// disk); Persist writes it again.
var ErrNotWritten = errors.New("set in the running process, but auth.json was not written")

// Persist writes auth.json as this process holds it (after SetPassword
// returned ErrNotWritten).
func (s *State) Persist() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return writeAuthFile(s.path, s.file)
}

// Derive returns the 32-byte key for purpose: HKDF-SHA256 of the master
// key with no salt and info "devspace/"+purpose. The same master key and
// purpose always give the same key; different purposes give independent
// keys. Purposes are fixed strings chosen by the caller, such as
// "cursor-hmac"; the returned slice is the caller's.
func (s *State) Derive(purpose string) []byte {
	return hkdfSHA256(s.key, "devspace/"+purpose, 32)
}

// Path returns the path of auth.json.
func (s *State) Path() string { return s.path }

// LogValue implements slog.LogValuer: a logged State shows only its path.
func (s *State) LogValue() slog.Value { return slog.StringValue(s.path) }

// Format implements fmt.Formatter so that printing a State with any verb,
// including %+v and %#v, shows its path and never the key or verifier.
func (s *State) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "authstate.State(%s)", s.path)
}
