package commands

import "testing"

// TestCommandLine: what the Owner is shown of a command: the shell text,
// or the words quoted where a shell would need it; control characters
// escaped; a credential that only the joined words make redacted.
func TestCommandLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		cmd  Command
		want string
	}{
		{"shell", Command{Shell: true, Command: "go test ./... | tee out"}, "go test ./... | tee out"},
		{"plain words", Command{Program: "go", Args: []string{"test", "-run", "TestX", "./internal/..."}}, "go test -run TestX ./internal/..."},
		{"quoted", Command{Program: "sh", Args: []string{"-c", "echo it's $HOME", ""}}, `sh -c 'echo it'\''s $HOME' ''`},
		{"control characters", Command{Program: "printf", Args: []string{"a\x1b[2J\nb"}}, `printf $"a\x1b[2J\nb"`},
		{"credential across arguments", Command{Program: "curl", Args: []string{"-H", "Authorization:", "Bearer", "9f8e7d6c5b4a3928171605f4e3d2c1b0"}},
			"curl -H Authorization: Bearer [REDACTED]"},
		{"credential in shell text", Command{Shell: true, Command: "curl -H 'Authorization: Bearer 9f8e7d6c5b4a3928171605f4e3d2c1b0' x"},
			"curl -H 'Authorization: Bearer [REDACTED]' x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := commandLine(tt.cmd); got != tt.want {
				t.Errorf("commandLine = %q, want %q", got, tt.want)
			}
		})
	}
}
