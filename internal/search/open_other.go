//go:build !unix

package search

import "os"

// Open flags. Without Unix FIFOs there is nothing to guard against beyond
// the type check that follows every open.
const (
	fileOpenFlags = os.O_RDONLY
	dirOpenFlags  = os.O_RDONLY
)
