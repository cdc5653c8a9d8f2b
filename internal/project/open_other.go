//go:build !unix

package project

import (
	"errors"
	"os"
)

// fdWalk needs openat, readlinkat and O_NOFOLLOW: DevSpace resolves Project
// paths only on Unix.
type fdWalk struct{ refuseGitDirs bool }

func startWalk(*os.Root) (*fdWalk, error) { return nil, errors.ErrUnsupported }

func (*fdWalk) close()           {}
func (*fdWalk) real() string     { return "" }
func (*fdWalk) checkRoot() error { return errors.ErrUnsupported }
func (*fdWalk) resolveElems([]string, bool) (*os.File, []string, error) {
	return nil, nil, errors.ErrUnsupported
}
