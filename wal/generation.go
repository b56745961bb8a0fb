package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
)

// Directory layout (drawn in doc.go): the caller's directory holds one live
// generation directory, gen-{n}; compaction builds gen-{n+1}.tmp and renames
// it into place. Inside a generation, tidwall/wal's segment files (named by
// the 20-digit index of their first entry) and the tail hint.
const (
	genPrefix = "gen-"
	tmpSuffix = fsutil.TempSuffix // of META and TAIL being replaced, and of a generation being built
	hintFile  = "TAIL"
	hintSize  = 12 // first index of the newest segment u64, crc32c u32
	// closedFile records a clean Close: the index of the last entry then.
	closedFile = "CLOSED"
	closedSize = 12 // last index u64, crc32c u32
	nameWidth  = 20 // tidwall/wal's segment name: %020d
)

func genName(n uint64) string { return fmt.Sprintf("%s%020d", genPrefix, n) }

// parseGen returns n for a gen-{n} name.
func parseGen(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, genPrefix)
	if !ok || len(s) != nameWidth {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && n > 0
}

// liveGeneration finds the live generation in root (0 when there is none)
// and what a crash can leave beside it: a generation being built
// (gen-{n}.tmp) and the one a compaction switched from but had not yet
// deleted. It changes nothing: Open removes the leftovers (removeAll) only
// once the live generation passed its checks, so that an Open refusing a
// damaged newest generation leaves the one before it in place. Other
// files are not the log's and are left alone.
func liveGeneration(root string) (live uint64, leftovers []string, _ error) {
	des, err := os.ReadDir(root)
	if err != nil {
		return 0, nil, fmt.Errorf("wal: %w", err)
	}
	var gens []uint64
	for _, de := range des {
		name := de.Name()
		if base, ok := strings.CutSuffix(name, tmpSuffix); ok {
			if _, ok := parseGen(base); ok {
				leftovers = append(leftovers, filepath.Join(root, name))
			}
			continue
		}
		if n, ok := parseGen(name); ok && de.IsDir() {
			gens = append(gens, n)
		}
	}
	if len(gens) == 0 {
		return 0, leftovers, nil
	}
	slices.Sort(gens)
	for _, n := range gens[:len(gens)-1] {
		leftovers = append(leftovers, filepath.Join(root, genName(n)))
	}
	return gens[len(gens)-1], leftovers, nil
}

// removeAll removes the leftovers liveGeneration found.
func removeAll(paths []string) error {
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("wal: remove what a compaction left behind: %w", err)
		}
	}
	return nil
}

// segmentFile is one tidwall/wal segment of a generation.
type segmentFile struct {
	path  string
	first uint64 // index of its first entry, from its name
}

// listSegments returns the generation's segments in index order and the
// first index of the newest segment its tail hint names (0 without one). A
// file named like a segment with a suffix (tidwall/wal's .START, .END and
// .TEMP files, which its Open would act on; this package never makes them)
// is refused; other files are ignored. It changes nothing: Open removes a
// TAIL.tmp that a crash left (removeHintTemp).
func listSegments(dir string) ([]segmentFile, uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("wal: %w", err)
	}
	var segs []segmentFile
	var hint uint64
	for _, de := range des {
		name := de.Name()
		path := filepath.Join(dir, name)
		switch {
		case name == hintFile:
			if hint, err = readHint(path); err != nil {
				return nil, 0, err
			}
		case len(name) >= nameWidth && isDigits(name[:nameWidth]):
			first, err := strconv.ParseUint(name[:nameWidth], 10, 64)
			if len(name) != nameWidth || err != nil || first == 0 || !de.Type().IsRegular() {
				return nil, 0, corrupt(path, 0, -1, "stray file named like a segment (tidwall/wal would act on it); this log never writes one")
			}
			segs = append(segs, segmentFile{path: path, first: first})
		}
	}
	// ReadDir sorts by name, and equal-width decimal names sort by index.
	return segs, hint, nil
}

// removeHintTemp removes the replacement of dir's tail hint that a crash
// interrupted, if any: it is never read.
func removeHintTemp(dir string) { os.Remove(filepath.Join(dir, hintFile+tmpSuffix)) }

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// writeHint records first as the newest segment of dir, atomically: a
// segment that later goes missing is then found by Open instead of the log
// silently ending at the segment before it.
func writeHint(dir string, first uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, first)
	b = binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
	return writeFileAtomic(filepath.Join(dir, hintFile), b)
}

func readHint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	if len(b) != hintSize || crc32c.Checksum(b[:8]) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, corrupt(path, 0, -1, "tail hint is not %d bytes with a matching crc32c", hintSize)
	}
	return binary.LittleEndian.Uint64(b), nil
}

// writeClosed records, atomically, that the log of generation dir was
// closed cleanly with last as its last entry: every entry up to it was
// fsync'd and acknowledged, so Open takes damage to any of them for
// corruption, never for a torn tail.
func writeClosed(dir string, last uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, last)
	b = binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
	return writeFileAtomic(filepath.Join(dir, closedFile), b)
}

// readClosed returns the last index the generation's clean-close record
// names, 0 when there is none (a new generation, or a crash before any
// clean Close of it). A damaged record is a *CorruptError: Open cannot
// tell then whether a damaged tail was acknowledged.
func readClosed(dir string) (uint64, error) {
	path := filepath.Join(dir, closedFile)
	// A CLOSED.tmp a crash left is replaced by the next Close's write.
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	if len(b) != closedSize || crc32c.Checksum(b[:8]) != binary.LittleEndian.Uint32(b[8:]) {
		return 0, corrupt(path, 0, -1, "clean-close record is not %d bytes with a matching crc32c (remove it to open the log as after a crash, which cuts a damaged last write batch)", closedSize)
	}
	return binary.LittleEndian.Uint64(b), nil
}

// writeFileAtomic is fsutil.WriteFileAtomic with the package's prefix.
func writeFileAtomic(path string, b []byte) error {
	if err := fsutil.WriteFileAtomic(path, b); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return n, err
}
