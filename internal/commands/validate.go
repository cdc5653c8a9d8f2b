package commands

import (
	"strings"

	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/process"
)

// What a command or an input may be. The bounds are the process
// manager's (process.MaxStdinBytes, process.MaxEnvEntries and
// process.MaxEnvBytes, process.MaxTimeout), which checks them again for
// its own callers.
var (
	ErrCommandMode = fault.New("command_mode_invalid",
		"Use exactly one mode: program (+ args) for direct mode, or shell: true with command for shell mode.")
	ErrShellArgs     = fault.New("command_mode_invalid", "args belong to direct mode; put them in command for shell mode.")
	ErrStdinTooLarge = fault.New("stdin_too_large", "stdin is limited to 1 MiB; write more with write_stdin.")
	ErrCharsTooLarge = fault.New("stdin_too_large", "chars is limited to 1 MiB per call.")
	ErrNUL           = fault.New("invalid_tool_input", "program, args, command and workingDirectory must not contain NUL")
	ErrCtrlC         = fault.New("invalid_tool_input", "chars must not contain a literal Ctrl-C (\\u0003); use interrupt")
)

// InputError is an argument the service refuses; its text says which and
// why (no host path).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }
func (e *InputError) Code() string  { return "invalid_tool_input" }

// Validate checks what exec_command asks to run: one mode, no NUL, stdin
// and the environment within their bounds. The timeout's range and the
// sandbox's values are the schema's.
func (c Command) Validate() error {
	direct, shell := c.Program != "", c.Shell || c.Command != ""
	if direct == shell || (shell && (!c.Shell || c.Command == "")) || (direct && c.Command != "") {
		return ErrCommandMode
	}
	if shell && len(c.Args) > 0 {
		return ErrShellArgs
	}
	if len(c.Stdin) > process.MaxStdinBytes {
		return ErrStdinTooLarge
	}
	for _, s := range append([]string{c.Program, c.Command, c.WorkingDirectory}, c.Args...) {
		if strings.IndexByte(s, 0) >= 0 {
			return ErrNUL
		}
	}
	if err := process.ValidateEnv(c.Environment); err != nil {
		return &InputError{Err: err}
	}
	return nil
}

// Validate checks what write_stdin sends: at most process.MaxStdinBytes,
// and no literal Ctrl-C (interrupt is how to send one).
func (in Input) Validate() error {
	if len(in.Chars) > process.MaxStdinBytes {
		return ErrCharsTooLarge
	}
	if strings.ContainsRune(in.Chars, '\x03') {
		return ErrCtrlC
	}
	return nil
}
