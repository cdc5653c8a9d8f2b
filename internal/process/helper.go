package process

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/devspace-dev/devspace/internal/sandbox"
)

// HelperName is the command helper's file name: a binary that links only
// this package (cmd/devspace-exec) and plays the supervisor and launcher
// roles. Every command starts one launcher, so what a launcher costs to
// start is paid per command; the helper starts in a fraction of the time
// the whole devspace binary takes (its package init alone is tens of
// milliseconds).
const HelperName = "devspace-exec"

// ProtocolCommand is the hidden subcommand that prints Protocol.
const ProtocolCommand = "__protocol"

// protocolRevision is raised when a message's meaning changes without its
// shape changing (Protocol covers the shape).
const protocolRevision = 5

// wireTypes are the messages between the server, a supervisor and a
// launcher (and the limits they inherit in their environment).
var wireTypes = []reflect.Type{
	reflect.TypeFor[supervisorSpec](), reflect.TypeFor[request](), reflect.TypeFor[event](),
	reflect.TypeFor[launcherReply](), reflect.TypeFor[sandbox.Policy](),
	reflect.TypeFor[commandLimits](), // supervisorLimitsEnv
}

// Protocol names what this build's server, supervisors and launchers say
// to each other: protocolRevision and the shape of every message (field
// names, types and JSON tags). Two binaries with the same Protocol can
// play each other's roles.
func Protocol() string {
	h := sha256.New()
	fmt.Fprintf(h, "revision %d\n", protocolRevision)
	seen := map[reflect.Type]bool{}
	for _, t := range wireTypes {
		describeType(h, t, seen)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// describeType writes t's shape, and that of the structs it holds, once.
func describeType(w interface{ Write([]byte) (int, error) }, t reflect.Type, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map {
			describeType(w, t.Key(), seen)
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	fmt.Fprintf(w, "struct %s.%s\n", t.PkgPath(), t.Name())
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(w, "  %s %s %q\n", f.Name, f.Type, f.Tag)
		describeType(w, f.Type, seen)
	}
}

// ErrNoHelper: no command helper lies beside the binary.
var ErrNoHelper = errors.New("no " + HelperName + " beside the binary")

// FindHelper returns the command helper that lies beside the binary exe
// when it speaks this build's Protocol. Otherwise it returns ErrNoHelper
// or why the helper there cannot be used (it does not answer, or it comes
// from another build and must not be mixed with this server); the caller
// then runs exe itself as supervisor.
func FindHelper(ctx context.Context, exe string) (string, error) {
	path := filepath.Join(filepath.Dir(exe), HelperName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoHelper
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, ProtocolCommand)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s does not answer: %w", HelperName, err)
	}
	if got := strings.TrimSpace(out.String()); got != Protocol() {
		return "", fmt.Errorf("%s is from another build (protocol %.24q, this server's %s)", HelperName, got, Protocol())
	}
	return path, nil
}
