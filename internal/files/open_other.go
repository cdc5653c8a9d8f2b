//go:build !unix

package files

import "os"

// openFlags: without Unix FIFOs there is nothing to guard against beyond the
// Lstat that precedes every open.
const openFlags = os.O_RDONLY
