// Command devspace-exec is DevSpace's command helper: the supervisor and
// the launcher that `devspace serve` starts for each command (see
// internal/process). It links the process layer only, so it starts in a
// fraction of the time the whole devspace binary takes; devspace uses it
// when it lies beside the devspace binary and comes from the same build,
// and otherwise starts itself in these roles. It is not a command to run
// by hand.
package main

import (
	"fmt"
	"os"

	"github.com/devspace-dev/devspace/internal/process"
)

func main() {
	if code, ok := process.InternalMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "devspace-exec is started by `devspace serve` to run commands; it is not a command to run by hand")
	os.Exit(2)
}
