package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropCapabilities empties the calling thread's capability sets, bounding
// and ambient sets included, so that neither the program it execs nor
// anything that program execs holds a capability: a server run as root
// would otherwise hand every command root's capabilities, which Landlock
// does not restrict (CAP_NET_RAW sniffs another grant's bearer token on
// loopback, CAP_CHOWN and CAP_SYS_ADMIN change files the domain cannot
// open). With the bounding set empty an exec as UID 0 gains nothing
// either. A thread with no capabilities to begin with (any server not run
// as root) cannot drop its bounding set, and needs not: no_new_privs keeps
// file capabilities and set-user-ID bits from adding any.
func dropCapabilities() error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	var data [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return fmt.Errorf("clear the capabilities: %w", err)
	}
	return nil
}
