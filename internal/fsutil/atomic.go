package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// TempSuffix is the suffix of the temporary file WriteFileAtomic writes
// next to its target. A crash can leave one behind; it is never read, and
// a store may remove it when it opens.
const TempSuffix = ".tmp"

// WriteFileAtomic replaces path with data: it writes path+TempSuffix,
// fsyncs it, renames it over path and fsyncs the directory, so a crash
// leaves either the old or the new content. On an error before the
// rename the temporary file is removed and path is untouched; after the
// rename (a failed directory fsync) path may hold either content.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + TempSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		// The temporary file is never read, but left behind it would sit in
		// the directory until the store's next open cleans it up.
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", tmp, rerr))
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	// After the rename tmp is gone: a failed directory fsync leaves nothing.
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
