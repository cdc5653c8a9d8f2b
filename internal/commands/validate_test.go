package commands_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/devspace-dev/devspace/internal/commands"
	"github.com/devspace-dev/devspace/internal/fault"
	"github.com/devspace-dev/devspace/internal/process"
)

// TestCommandValidate: what a command and a stdin write may be, the
// commands service's rule (the edge only decodes), with its codes.
func TestCommandValidate(t *testing.T) {
	tooMany := map[string]string{}
	for i := range process.MaxEnvEntries + 1 {
		tooMany[fmt.Sprintf("V%d", i)] = "x"
	}
	for name, tc := range map[string]struct {
		c    commands.Command
		code string
	}{
		"direct":             {commands.Command{Program: "ls", Args: []string{"-l"}}, ""},
		"shell":              {commands.Command{Shell: true, Command: "ls -l"}, ""},
		"neither mode":       {commands.Command{}, "command_mode_invalid"},
		"both modes":         {commands.Command{Program: "ls", Shell: true, Command: "ls"}, "command_mode_invalid"},
		"command, not shell": {commands.Command{Command: "ls"}, "command_mode_invalid"},
		"shell, no command":  {commands.Command{Shell: true}, "command_mode_invalid"},
		"shell with args":    {commands.Command{Shell: true, Command: "ls", Args: []string{"-l"}}, "command_mode_invalid"},
		"stdin at the bound": {commands.Command{Program: "cat", Stdin: strings.Repeat("x", process.MaxStdinBytes)}, ""},
		"stdin over it":      {commands.Command{Program: "cat", Stdin: strings.Repeat("x", process.MaxStdinBytes+1)}, "stdin_too_large"},
		"a NUL in args":      {commands.Command{Program: "ls", Args: []string{"a\x00b"}}, "invalid_tool_input"},
		"a NUL in the dir":   {commands.Command{Program: "ls", WorkingDirectory: "a\x00b"}, "invalid_tool_input"},
		"a bad name":         {commands.Command{Program: "ls", Environment: map[string]string{"1A": "x"}}, "invalid_tool_input"},
		"too many variables": {commands.Command{Program: "ls", Environment: tooMany}, "invalid_tool_input"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.c.Validate()
			code, _ := fault.CodeOf(err)
			if code != tc.code || (tc.code == "") != (err == nil) {
				t.Errorf("Validate = %v (code %q), want code %q", err, code, tc.code)
			}
		})
	}
	for name, tc := range map[string]struct {
		in   commands.Input
		want error
	}{
		"chars":            {commands.Input{Chars: "y\n"}, nil},
		"a literal Ctrl-C": {commands.Input{Chars: "a\x03"}, commands.ErrCtrlC},
		"over the bound":   {commands.Input{Chars: strings.Repeat("x", process.MaxStdinBytes+1)}, commands.ErrCharsTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			if err := tc.in.Validate(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Validate = %v, want %v", err, tc.want)
			}
		})
	}
}
