package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// SyncDir makes the entries of dir (creations, renames, removals) durable.
// Its error names dir.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// MkdirAllSynced creates dir and its missing parents, like os.MkdirAll, and
// fsyncs the parent of every directory it creates: fsyncs inside a new
// directory do not make its own entry durable, so without this a crash
// could lose a whole directory whose files were all fsync'd. It returns
// the directories it created, outermost first.
func MkdirAllSynced(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	slices.Reverse(missing)
	for _, d := range missing {
		if err := SyncDir(filepath.Dir(d)); err != nil {
			return nil, err
		}
	}
	return missing, nil
}
