//go:build unix

package grade

import (
	"os"
	"syscall"
)

// fileID names a file by device and inode.
type fileID struct{ dev, ino uint64 }

func idOf(st os.FileInfo) (fileID, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(s.Dev), uint64(s.Ino)}, true
}
