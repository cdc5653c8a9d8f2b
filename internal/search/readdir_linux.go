package search

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"

	"github.com/devspace-dev/devspace/internal/project"
)

// direntBufBytes is the getdents buffer; each call returns as many entries
// as fit.
const direntBufBytes = 32 << 10

// readDirents reads the entries of the open directory f with getdents64,
// at most limit of them (more reports truncated). Unlike (*os.File).ReadDir
// on a file opened through an *os.Root, it does not lstat every entry: the
// type comes from d_type, and only an unknown type (DT_UNKNOWN, on file
// systems that do not fill it) is asked of f, by name.
func readDirents(f *os.File, limit int) (entries []dirent, truncated bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false, err
	}
	buf := make([]byte, direntBufBytes)
	var unknown []int
	var readErr error
	ctrlErr := rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.ReadDirent(int(fd), buf)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				readErr = err
				return true
			}
			if n <= 0 {
				return true
			}
			for b := buf[:n]; len(b) >= 19; {
				reclen := int(binary.NativeEndian.Uint16(b[16:18]))
				if reclen < 19 || reclen > len(b) {
					break
				}
				typ, nameBytes := b[18], b[19:reclen]
				b = b[reclen:]
				for i, c := range nameBytes {
					if c == 0 {
						nameBytes = nameBytes[:i]
						break
					}
				}
				name := string(nameBytes)
				if name == "." || name == ".." || name == "" {
					continue
				}
				if len(entries) >= limit {
					truncated = true
					return true
				}
				mode, known := direntMode(typ)
				if !known {
					unknown = append(unknown, len(entries))
				}
				entries = append(entries, dirent{name: name, typ: mode})
			}
		}
	})
	if ctrlErr != nil {
		return nil, false, ctrlErr
	}
	if readErr != nil {
		return nil, false, readErr
	}
	for _, i := range unknown {
		if typ, _, err := project.LstatAt(f, entries[i].name); err == nil {
			entries[i].typ = typ
		} else {
			entries[i].typ = fs.ModeIrregular
		}
	}
	return entries, truncated, nil
}

func direntMode(t byte) (fs.FileMode, bool) {
	switch t {
	case syscall.DT_REG:
		return 0, true
	case syscall.DT_DIR:
		return fs.ModeDir, true
	case syscall.DT_LNK:
		return fs.ModeSymlink, true
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe, true
	case syscall.DT_SOCK:
		return fs.ModeSocket, true
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case syscall.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}
