//go:build !unix

package skills

import "os"

// Open flags. Without Unix FIFOs there is nothing to guard against beyond the
// Stat that precedes every open.
const (
	fileOpenFlags = os.O_RDONLY
	dirOpenFlags  = os.O_RDONLY
)
