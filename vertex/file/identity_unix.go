//go:build unix

package file

import (
	"io/fs"
	"syscall"
)

// identityOf is the device and inode of the file fi describes: a path
// that names another identity than the one read names another file.
func identityOf(fi fs.FileInfo) identity {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	}
	return identity{}
}
