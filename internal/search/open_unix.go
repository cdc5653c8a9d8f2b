//go:build unix

package search

import (
	"os"
	"syscall"
)

// Open flags. O_NONBLOCK makes opening a FIFO (swapped in after the walk
// saw a regular file) return at once instead of waiting for a writer; it
// does not change reads of regular files or directories. O_NOCTTY keeps a
// terminal from becoming the controlling one.
const (
	fileOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
	dirOpenFlags  = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_DIRECTORY
)
