package authstate

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fastParams keep tests quick; production uses DefaultParams.
var fastParams = Params{Memory: 256, Iterations: 1, Parallelism: 1}

// initState runs Init with fast params and Load, failing the test on error.
func initState(t *testing.T, dir string, opts InitOptions) (*State, string) {
	t.Helper()
	if opts.Params == (Params{}) {
		opts.Params = fastParams
	}
	pw, err := Init(dir, opts)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	s, err := Load(dir, opts.MasterKeyFile)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	s.hashParams = fastParams.withDefaults()
	return s, pw
}

func verify(t *testing.T, s *State, pw string) bool {
	t.Helper()
	ok, err := s.VerifyPassword(context.Background(), []byte(pw))
	if err != nil {
		t.Fatalf("VerifyPassword: %v", err)
	}
	return ok
}

func TestInitLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, pw := initState(t, dir, InitOptions{})
	if want := filepath.Join(dir, FileName); s.Path() != want {
		t.Errorf("Path() = %q, want %q", s.Path(), want)
	}
	tests := []struct {
		name     string
		password string
		want     bool
	}{
		{"generated password", pw, true},
		{"wrong password", "wrong-password", false},
		{"prefix", pw[:len(pw)-1], false},
		{"suffix added", pw + "x", false},
		{"upper case", strings.ToUpper(pw), false},
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxPasswordLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verify(t, s, tt.password); got != tt.want {
				t.Errorf("VerifyPassword = %v, want %v", got, tt.want)
			}
		})
	}

	// The atomic write leaves no temp file behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{FileName}, names); diff != "" {
		t.Errorf("state dir entries (-want +got):\n%s", diff)
	}
}

func TestInitGivenPassword(t *testing.T) {
	dir := t.TempDir()
	got, err := Init(dir, InitOptions{Password: []byte("correct horse battery"), Params: fastParams})
	if err != nil {
		t.Fatal(err)
	}
	if got != "correct horse battery" {
		t.Errorf("Init returned %q, want the given password", got)
	}
	s, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !verify(t, s, "correct horse battery") {
		t.Error("given password does not verify")
	}
}

func TestInitInvalid(t *testing.T) {
	tests := []struct {
		name    string
		opts    InitOptions
		wantErr error
	}{
		{"short password", InitOptions{Password: []byte("seven77"), Params: fastParams}, ErrPasswordLength},
		{"empty password", InitOptions{Password: []byte{}, Params: fastParams}, ErrPasswordLength},
		{"long password", InitOptions{Password: bytes.Repeat([]byte("p"), MaxPasswordLen+1), Params: fastParams}, ErrPasswordLength},
		{"missing key file", InitOptions{MasterKeyFile: "/nonexistent/key", Params: fastParams}, ErrMasterKey},
		{"memory too small", InitOptions{Params: Params{Memory: 4, Iterations: 1}}, nil},
		{"too many iterations", InitOptions{Params: Params{Memory: 256, Iterations: 1000}}, nil},
		{"short salt", InitOptions{Params: Params{Memory: 256, Iterations: 1, SaltLen: 4}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			_, err := Init(dir, tt.opts)
			if err == nil {
				t.Fatal("Init succeeded, want error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Init error = %v, want %v", err, tt.wantErr)
			}
			if len(tt.opts.Password) > 0 && strings.Contains(err.Error(), string(tt.opts.Password)) {
				t.Errorf("error %q contains the password", err)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
				t.Error("auth.json was written despite the error")
			}
		})
	}
}

func TestInitExistingAndForce(t *testing.T) {
	dir := t.TempDir()
	_, oldPW := initState(t, dir, InitOptions{})

	_, err := Init(dir, InitOptions{Params: fastParams})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Init error = %v, want ErrExists", err)
	}
	s, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if !verify(t, s, oldPW) {
		t.Fatal("refused Init changed the password")
	}
	oldKey := s.Derive("test")

	newPW, err := Init(dir, InitOptions{Force: true, Params: fastParams})
	if err != nil {
		t.Fatalf("Init with Force: %v", err)
	}
	s, err = Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pw   string
		want bool
	}{
		{"old password", oldPW, false},
		{"new password", newPW, true},
	}
	for _, tt := range tests {
		if got := verify(t, s, tt.pw); got != tt.want {
			t.Errorf("%s: VerifyPassword = %v, want %v", tt.name, got, tt.want)
		}
	}
	if bytes.Equal(oldKey, s.Derive("test")) {
		t.Error("Force kept the old master key")
	}
}

func TestModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "state")
	s, _ := initState(t, dir, InitOptions{})
	check := func(path string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %#o, want %#o", path, got, want)
		}
	}
	check(dir, 0o700)
	check(s.Path(), 0o600)
	if err := s.SetPassword([]byte("another password")); err != nil {
		t.Fatal(err)
	}
	check(s.Path(), 0o600)
}

func TestLoadMode(t *testing.T) {
	tests := []struct {
		mode    os.FileMode
		wantErr error
	}{
		{0o600, nil},
		{0o400, nil},
		{0o644, ErrInsecureMode},
		{0o640, ErrInsecureMode},
		{0o604, ErrInsecureMode},
		{0o660, ErrInsecureMode},
		{0o601, ErrInsecureMode},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%#o", tt.mode), func(t *testing.T) {
			dir := t.TempDir()
			initState(t, dir, InitOptions{})
			if err := os.Chmod(filepath.Join(dir, FileName), tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir, "")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load error = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("error %q lacks the chmod 600 hint", err)
			}
		})
	}
}

func TestLoadNotInitialized(t *testing.T) {
	_, err := Load(t.TempDir(), "")
	if !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("Load error = %v, want ErrNotInitialized", err)
	}
}

// testKey is a fixed master key for key-file tests.
var testKey = func() []byte {
	k := make([]byte, MasterKeyLen)
	for i := range k {
		k[i] = byte(i*7 + 3)
	}
	k[31] = '\n' // a raw key may end in a newline byte
	return k
}()

func writeKeyFile(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, content, 0o444); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMasterKeyFile(t *testing.T) {
	hexKey := hex.EncodeToString(testKey)
	stdKey := base64.StdEncoding.EncodeToString(testKey)
	tests := []struct {
		name    string
		content []byte
	}{
		{"raw", testKey},
		{"hex", []byte(hexKey)},
		{"hex newline", []byte(hexKey + "\n")},
		{"hex upper case crlf", []byte(strings.ToUpper(hexKey) + "\r\n")},
		{"base64", []byte(stdKey)},
		{"base64 newline", []byte(stdKey + "\n")},
		{"base64 unpadded", []byte(base64.RawStdEncoding.EncodeToString(testKey) + "\n")},
		{"base64url", []byte(base64.URLEncoding.EncodeToString(testKey))},
	}
	wantCursor, err := hkdf.Key(sha256.New, testKey, nil, "devspace/cursor", 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			keyFile := writeKeyFile(t, tt.content)
			s, pw := initState(t, dir, InitOptions{MasterKeyFile: keyFile})
			if !verify(t, s, pw) {
				t.Error("password does not verify")
			}
			if diff := cmp.Diff(wantCursor, s.Derive("cursor")); diff != "" {
				t.Errorf("Derive(cursor) (-want +got):\n%s", diff)
			}

			data, err := os.ReadFile(s.Path())
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(data, &fields); err != nil {
				t.Fatal(err)
			}
			if _, ok := fields["masterKey"]; ok {
				t.Error("auth.json has a masterKey field although the key comes from a file")
			}
			for _, enc := range []string{string(testKey), hexKey, strings.ToUpper(hexKey), stdKey,
				base64.RawStdEncoding.EncodeToString(testKey), base64.URLEncoding.EncodeToString(testKey)} {
				if bytes.Contains(data, []byte(enc)) {
					t.Errorf("auth.json contains the master key (%d-byte encoding)", len(enc))
				}
			}
		})
	}
}

func TestMasterKeyFileInvalid(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
	}{
		{"empty", nil},
		{"newline only", []byte("\n")},
		{"raw 31 bytes", testKey[:31]},
		{"raw 33 bytes", append(bytes.Clone(testKey), 0x01)},
		{"hex 62 digits", []byte(hex.EncodeToString(testKey[:31]))},
		{"hex 64 non-digits", []byte(strings.Repeat("zq", 32) + "\n")},
		{"base64 of 16 bytes", []byte(base64.StdEncoding.EncodeToString(testKey[:16]))},
		{"base64 of 48 bytes", []byte(base64.StdEncoding.EncodeToString(bytes.Repeat(testKey, 2)[:48]))},
		{"text passphrase", []byte("my secret passphrase for devspace key\n")},
		{"huge", bytes.Repeat([]byte("A"), 10000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyFile := writeKeyFile(t, tt.content)
			_, err := Init(t.TempDir(), InitOptions{MasterKeyFile: keyFile, Params: fastParams})
			if !errors.Is(err, ErrMasterKey) {
				t.Fatalf("Init error = %v, want ErrMasterKey", err)
			}
			if trimmed := bytes.TrimSpace(tt.content); len(trimmed) >= 4 && strings.Contains(err.Error(), string(trimmed[:4])) {
				t.Errorf("error %q quotes the key file", err)
			}
		})
	}
}

func TestMasterKeySourceMismatch(t *testing.T) {
	keyFile := writeKeyFile(t, testKey)
	otherKey := bytes.Clone(testKey)
	otherKey[0] ^= 1
	otherFile := writeKeyFile(t, otherKey)

	external := t.TempDir()
	initState(t, external, InitOptions{MasterKeyFile: keyFile})
	inline := t.TempDir()
	initState(t, inline, InitOptions{})

	tests := []struct {
		name, dir, keyFile string
	}{
		{"external key not given", external, ""},
		{"external key differs", external, otherFile},
		{"inline key and key file", inline, keyFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.dir, tt.keyFile)
			if !errors.Is(err, ErrMasterKey) {
				t.Fatalf("Load error = %v, want ErrMasterKey", err)
			}
		})
	}
}

func TestDerive(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a, _ := initState(t, dirA, InitOptions{})
	b, _ := initState(t, dirB, InitOptions{})
	a2, err := Load(dirA, "")
	if err != nil {
		t.Fatal(err)
	}

	for _, purpose := range []string{"", "cursor", "project-ref", strings.Repeat("x", 1000)} {
		if got := len(a.Derive(purpose)); got != 32 {
			t.Errorf("len(Derive(%.10q)) = %d, want 32", purpose, got)
		}
	}
	tests := []struct {
		name      string
		x, y      []byte
		wantEqual bool
	}{
		{"same key and purpose, same State", a.Derive("cursor"), a.Derive("cursor"), true},
		{"same key and purpose, reloaded", a.Derive("cursor"), a2.Derive("cursor"), true},
		{"different purpose", a.Derive("cursor"), a.Derive("project-ref"), false},
		{"different key", a.Derive("cursor"), b.Derive("cursor"), false},
	}
	for _, tt := range tests {
		if got := bytes.Equal(tt.x, tt.y); got != tt.wantEqual {
			t.Errorf("%s: equal = %v, want %v", tt.name, got, tt.wantEqual)
		}
	}
	// The key check value stored for external keys must not be derivable.
	if bytes.Equal(a.Derive("master-key-check")[:keyCheckLen], keyCheck(a.key)) {
		t.Error("Derive can reproduce the key check value")
	}
}

func TestSetPassword(t *testing.T) {
	dir := t.TempDir()
	s, oldPW := initState(t, dir, InitOptions{})
	keyBefore := s.Derive("cursor")
	const newPW = "a brand new owner password"
	if err := s.SetPassword([]byte(newPW)); err != nil {
		t.Fatal(err)
	}
	reloaded, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		name string
		s    *State
	}{{"in memory", s}, {"reloaded", reloaded}} {
		if verify(t, st.s, oldPW) {
			t.Errorf("%s: old password still verifies", st.name)
		}
		if !verify(t, st.s, newPW) {
			t.Errorf("%s: new password does not verify", st.name)
		}
	}
	if diff := cmp.Diff(keyBefore, reloaded.Derive("cursor")); diff != "" {
		t.Errorf("SetPassword changed the master key (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(s.hashParams, reloaded.v.params); diff != "" {
		t.Errorf("stored params (-want +got):\n%s", diff)
	}

	err = s.SetPassword([]byte("short"))
	if !errors.Is(err, ErrPasswordLength) {
		t.Errorf("SetPassword(short) error = %v, want ErrPasswordLength", err)
	}
	if !verify(t, s, newPW) {
		t.Error("failed SetPassword changed the password")
	}
}

func TestSetPasswordExternalKey(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeKeyFile(t, testKey)
	s, _ := initState(t, dir, InitOptions{MasterKeyFile: keyFile})
	if err := s.SetPassword([]byte("a brand new owner password")); err != nil {
		t.Fatal(err)
	}
	reloaded, err := Load(dir, keyFile)
	if err != nil {
		t.Fatalf("Load after SetPassword: %v", err)
	}
	if !verify(t, reloaded, "a brand new owner password") {
		t.Error("new password does not verify after reload")
	}
}

func TestLoadUsesDefaultParamsForNewHashes(t *testing.T) {
	dir := t.TempDir()
	initState(t, dir, InitOptions{})
	s, err := Load(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultParams(), s.hashParams); diff != "" {
		t.Errorf("hash params (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(fastParams.withDefaults(), s.v.params); diff != "" {
		t.Errorf("verifier params come from the file (-want +got):\n%s", diff)
	}
}

func TestPasswordNotInFile(t *testing.T) {
	dir := t.TempDir()
	const pw = "Distinctive-Owner-Password-42"
	s, _ := initState(t, dir, InitOptions{Password: []byte(pw)})
	const pw2 = "Another-Distinctive-Password-43"
	check := func(pw string) {
		t.Helper()
		data, err := os.ReadFile(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		for _, enc := range []string{pw, strings.ToLower(pw), base64.StdEncoding.EncodeToString([]byte(pw)), hex.EncodeToString([]byte(pw))} {
			if bytes.Contains(data, []byte(enc)) {
				t.Errorf("auth.json contains the password (encoding %q)", enc)
			}
		}
	}
	check(pw)
	if err := s.SetPassword([]byte(pw2)); err != nil {
		t.Fatal(err)
	}
	check(pw2)
}

func TestVerifyConcurrencyBound(t *testing.T) {
	s, pw := initState(t, t.TempDir(), InitOptions{})
	n := max(runtime.NumCPU(), 1)
	if cap(s.sem) != n {
		t.Fatalf("semaphore size = %d, want NumCPU = %d", cap(s.sem), n)
	}
	var inFlight, peak atomic.Int32
	s.testHookHashing = func() {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
	}

	callers := n + 3
	results := make([]bool, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ok, err := s.VerifyPassword(context.Background(), []byte(pw))
			if err != nil {
				t.Errorf("VerifyPassword: %v", err)
			}
			results[i] = ok
		})
	}
	wg.Wait()
	for i, ok := range results {
		if !ok {
			t.Errorf("caller %d: VerifyPassword = false", i)
		}
	}
	if got := int(peak.Load()); got > n || got < 1 {
		t.Errorf("peak concurrent hashes = %d, want 1..%d", got, n)
	}
}

func TestVerifyWaitHonoursContext(t *testing.T) {
	s, pw := initState(t, t.TempDir(), InitOptions{})
	// Occupy every slot, as n slow hashes would.
	for range cap(s.sem) {
		s.sem <- struct{}{}
	}
	hashed := false
	s.testHookHashing = func() { hashed = true }

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	timeout, cancelTimeout := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelTimeout()
	tests := []struct {
		name    string
		ctx     context.Context
		wantErr error
	}{
		{"cancelled before", cancelled, context.Canceled},
		{"deadline while waiting", timeout, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := s.VerifyPassword(tt.ctx, []byte(pw))
			if ok || !errors.Is(err, tt.wantErr) {
				t.Errorf("VerifyPassword = %v, %v; want false, %v", ok, err, tt.wantErr)
			}
		})
	}
	if hashed {
		t.Error("a caller hashed without a free slot")
	}
	// Freeing a slot lets the next caller through.
	<-s.sem
	if !verify(t, s, pw) {
		t.Error("VerifyPassword after a slot was freed = false")
	}
}

func TestLoadCorrupt(t *testing.T) {
	dir := t.TempDir()
	initState(t, dir, InitOptions{})
	valid, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	// mutate returns valid with f applied to its decoded form.
	mutate := func(f func(m map[string]any, pw map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(valid, &m); err != nil {
			t.Fatal(err)
		}
		pw, _ := m["password"].(map[string]any)
		f(m, pw)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var secrets map[string]any
	json.Unmarshal(valid, &secrets)
	secretValues := []string{secrets["masterKey"].(string), secrets["password"].(map[string]any)["salt"].(string),
		secrets["password"].(map[string]any)["hash"].(string)}

	tests := []struct {
		name    string
		content []byte
		wantErr error
	}{
		{"empty", nil, ErrCorrupt},
		{"not json", []byte("hello"), ErrCorrupt},
		{"truncated", valid[:len(valid)/2], ErrCorrupt},
		{"array", []byte("[1,2]"), ErrCorrupt},
		{"missing version", mutate(func(m, _ map[string]any) { delete(m, "version") }), ErrCorrupt},
		{"version string", mutate(func(m, _ map[string]any) { m["version"] = "1" }), ErrCorrupt},
		{"version 2", mutate(func(m, _ map[string]any) { m["version"] = 2 }), ErrUnsupportedVersion},
		{"version 0", mutate(func(m, _ map[string]any) { m["version"] = 0 }), ErrUnsupportedVersion},
		{"missing password", mutate(func(m, _ map[string]any) { delete(m, "password") }), ErrCorrupt},
		{"argon2i", mutate(func(_, pw map[string]any) { pw["algorithm"] = "argon2i" }), ErrUnsupportedVersion},
		{"argon2 version 16", mutate(func(_, pw map[string]any) { pw["version"] = 16 }), ErrUnsupportedVersion},
		{"salt not base64", mutate(func(_, pw map[string]any) { pw["salt"] = "!!!" }), ErrCorrupt},
		{"short salt", mutate(func(_, pw map[string]any) { pw["salt"] = "AAAA" }), ErrCorrupt},
		{"hash not base64", mutate(func(_, pw map[string]any) { pw["hash"] = "%%%" }), ErrCorrupt},
		{"memory huge", mutate(func(_, pw map[string]any) { pw["memory"] = 1 << 31 }), ErrCorrupt},
		{"memory negative", mutate(func(_, pw map[string]any) { pw["memory"] = -1 }), ErrCorrupt},
		{"zero iterations", mutate(func(_, pw map[string]any) { pw["iterations"] = 0 }), ErrCorrupt},
		{"parallelism 300", mutate(func(_, pw map[string]any) { pw["parallelism"] = 300 }), ErrCorrupt},
		{"missing master key", mutate(func(m, _ map[string]any) { delete(m, "masterKey") }), ErrCorrupt},
		{"short master key", mutate(func(m, _ map[string]any) { m["masterKey"] = "AAAA" }), ErrCorrupt},
		{"master key and check", mutate(func(m, _ map[string]any) { m["masterKeyCheck"] = "AAAA" }), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, FileName), tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir, "")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Load error = %v, want %v", err, tt.wantErr)
			}
			for _, v := range secretValues {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error %q contains a secret from the file", err)
				}
			}
		})
	}
}

func TestGeneratePassword(t *testing.T) {
	re := regexp.MustCompile(`^[a-z2-7]{5}(-[a-z2-7]{5}){5}$`)
	seen := map[string]bool{}
	for range 200 {
		pw := GeneratePassword()
		if !re.MatchString(pw) {
			t.Fatalf("GeneratePassword() = %q, want six dash-separated groups of five base32 characters", pw)
		}
		if seen[pw] {
			t.Fatalf("GeneratePassword repeated %q", pw)
		}
		seen[pw] = true
	}
}

func TestStateFormattingHidesSecrets(t *testing.T) {
	s, _ := initState(t, t.TempDir(), InitOptions{})
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
		fmt.Fprintf(&out, verb+"\n", s)
	}
	slog.New(slog.NewTextHandler(&out, nil)).Info("loaded", "state", s)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("loaded", "state", s)
	for _, secret := range []string{string(s.key), hex.EncodeToString(s.key), fmt.Sprint(s.key),
		base64.StdEncoding.EncodeToString(s.key), fmt.Sprint(s.v.hash), hex.EncodeToString(s.v.hash)} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("formatted State contains a secret:\n%s", out.String())
		}
	}
	if !strings.Contains(out.String(), s.Path()) {
		t.Errorf("formatted State lacks its path:\n%s", out.String())
	}
}

func BenchmarkVerifyPassword(b *testing.B) {
	dir := b.TempDir()
	pw, err := Init(dir, InitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := Load(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := s.VerifyPassword(ctx, []byte(pw))
		if err != nil || !ok {
			b.Fatalf("VerifyPassword = %v, %v", ok, err)
		}
	}
}

// TestHashMemoryReturned: after a verification with the default
// parameters (64 MiB), the buffer goes back to the system within about
// releaseDelay instead of staying resident.
func TestHashMemoryReturned(t *testing.T) {
	s, pw := initState(t, t.TempDir(), InitOptions{Params: DefaultParams()})
	retained := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapIdle - m.HeapReleased
	}
	if ok, err := s.VerifyPassword(context.Background(), []byte(pw)); !ok || err != nil {
		t.Fatalf("verify: %v %v", ok, err)
	}
	runtime.GC()
	if before := retained(); before < uint64(DefaultParams().Memory)<<10/2 {
		t.Logf("runtime already released the buffer (%d bytes idle); nothing to prove", before)
	}
	deadline := time.Now().Add(releaseDelay + 5*time.Second)
	for retained() > 16<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of idle heap still held after a hash", retained())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
