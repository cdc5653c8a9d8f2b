//go:build unix

package files

import (
	"os"
	"syscall"
)

// openFlags: O_NONBLOCK makes opening a FIFO return at once instead of
// waiting for a writer (it does not change reads of regular files);
// O_NOCTTY keeps a terminal from becoming the controlling one.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY
