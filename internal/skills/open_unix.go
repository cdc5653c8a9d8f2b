//go:build unix

package skills

import (
	"os"
	"syscall"
)

// Open flags. O_NONBLOCK makes opening a FIFO return at once instead of
// waiting for a writer (a repository can put one where SKILL.md or a
// directory is expected); it does not change reads of regular files or
// directories. O_NOCTTY keeps a terminal from becoming the controlling one.
const (
	fileOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	dirOpenFlags  = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_DIRECTORY
)
