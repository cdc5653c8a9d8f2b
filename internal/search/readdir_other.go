//go:build !linux

package search

import (
	"errors"
	"io"
	"os"
)

// readDirents reads the entries of the open directory f, at most limit of
// them (more reports truncated).
func readDirents(f *os.File, _ *os.Root, limit int) (entries []dirent, truncated bool, err error) {
	for {
		batch, err := f.ReadDir(readDirChunk)
		for _, d := range batch {
			if len(entries) >= limit {
				return entries, true, nil
			}
			entries = append(entries, dirent{name: d.Name(), typ: d.Type()})
		}
		if errors.Is(err, io.EOF) || err == nil && len(batch) == 0 {
			return entries, false, nil
		}
		if err != nil {
			return entries, false, err
		}
	}
}
