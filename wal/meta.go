package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
)

// The metadata record: META in the WAL's directory, written when Open
// creates the log (after its first generation) and replaced atomically by
// SetMetadata. It says two things: that a log lives here (so Open refuses a
// directory whose live generation is gone instead of starting an empty
// log), and what the caller recorded about the log (a reduce records its
// windowing and partition, as isb/mmap records a topic's partition count
// and codec). Integers little-endian, n and len uvarints:
//
//	+--------+-------------+------------+-------------+--------------------------------+
//	| "RNWM" | version u32 | length u32 | crc32c u32  | body: n, (len, key, len, val)* |
//	|        | = 1         | of body    | of body     | keys sorted, distinct          |
//	+--------+-------------+------------+-------------+--------------------------------+
//	 0        4             8            12            16
const (
	metaFile       = "META"
	metaMagic      = "RNWM"
	metaVersion    = 1
	metaHeaderSize = 16
	metaMaxSize    = 1 << 16
)

// Metadata sets the metadata Open records when it creates the log (or
// opens one that has no record yet: a log of an earlier version, or one
// whose creation a crash cut short). An existing record is not replaced:
// Recovered.Metadata returns it, for the caller to compare with what it
// expects, and SetMetadata replaces it. Default: an empty record.
func Metadata(m map[string]string) Option {
	return func(c *config) { c.meta = maps.Clone(m) }
}

// Seed sets the checkpoint of a log that Open creates: the highest offset
// per partition and the watermark that Recovered reports although no
// entry carries them, as if entries and GC events compacted away had.
// It lets a caller carry a log's state over to a new one (see the
// pipeline's reduce WAL layout); it does nothing to an existing log.
func Seed(offsets map[int32]int64, watermark time.Time) Option {
	return func(c *config) { c.seedOffsets, c.seedWatermark = maps.Clone(offsets), watermark }
}

// encodeMeta frames m as drawn above.
func encodeMeta(m map[string]string) []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		body = binary.AppendUvarint(body, uint64(len(k)))
		body = append(body, k...)
		body = binary.AppendUvarint(body, uint64(len(m[k])))
		body = append(body, m[k]...)
	}
	b := make([]byte, metaHeaderSize, metaHeaderSize+len(body))
	copy(b, metaMagic)
	binary.LittleEndian.PutUint32(b[4:], metaVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(body)))
	binary.LittleEndian.PutUint32(b[12:], crc32c.Checksum(body))
	return append(b, body...)
}

// decodeMeta checks and decodes the bytes of the META file path.
func decodeMeta(path string, b []byte) (map[string]string, error) {
	bad := func(off int64, format string, args ...any) (map[string]string, error) {
		return nil, corrupt(path, 0, off, "metadata record: "+format, args...)
	}
	if len(b) < metaHeaderSize {
		return bad(int64(len(b)), "%d bytes, the header has %d", len(b), metaHeaderSize)
	}
	if string(b[:4]) != metaMagic {
		return bad(0, "magic %q, want %q", b[:4], metaMagic)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != metaVersion {
		return bad(4, "version %d, this runnel reads version %d", v, metaVersion)
	}
	body := b[metaHeaderSize:]
	if n := binary.LittleEndian.Uint32(b[8:]); int(n) != len(body) {
		return bad(8, "length %d, but %d bytes follow the header", n, len(body))
	}
	if got, want := crc32c.Checksum(body), binary.LittleEndian.Uint32(b[12:]); got != want {
		return bad(12, "crc32c %#08x, the body's is %#08x", want, got)
	}
	pos := 0
	next := func() (string, bool) {
		n, k := binary.Uvarint(body[pos:])
		if k <= 0 || n > uint64(len(body)-pos-k) {
			return "", false
		}
		pos += k
		s := string(body[pos : pos+int(n)])
		pos += int(n)
		return s, true
	}
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)) {
		return bad(metaHeaderSize, "bad field count")
	}
	pos = k
	m := make(map[string]string, min(n, 64))
	prev := ""
	for i := range n {
		at := int64(metaHeaderSize + pos)
		key, ok1 := next()
		val, ok2 := next()
		if !ok1 || !ok2 {
			return bad(at, "field %d is cut short", i)
		}
		if i > 0 && key <= prev {
			return bad(at, "field %q after %q: keys must be sorted and distinct", key, prev)
		}
		m[key], prev = val, key
	}
	if pos != len(body) {
		return bad(int64(metaHeaderSize+pos), "%d bytes after the last field", len(body)-pos)
	}
	return m, nil
}

// readMeta reads root's metadata record; ok is false when there is none.
// It changes nothing: checkMeta removes a META.tmp that a crash left.
func readMeta(root string) (m map[string]string, ok bool, err error) {
	path := filepath.Join(root, metaFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wal: %w", err)
	}
	if len(b) > metaMaxSize {
		return nil, false, corrupt(path, 0, -1, "metadata record of %d bytes, at most %d", len(b), metaMaxSize)
	}
	m, err = decodeMeta(path, b)
	return m, err == nil, err
}

// writeMeta replaces root's metadata record durably.
func writeMeta(root string, m map[string]string) error {
	b := encodeMeta(m)
	if len(b) > metaMaxSize {
		return fmt.Errorf("%w: metadata of %d bytes, at most %d", ErrInvalid, len(b), metaMaxSize)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(root, metaFile), b); err != nil {
		return fmt.Errorf("wal: write metadata record: %w", err)
	}
	return nil
}

// SetMetadata replaces the log's metadata record durably (Recovered keeps
// what Open found). A reduce calls it to record another windowing once
// its log holds no open window of the old one.
func (w *WAL) SetMetadata(m map[string]string) error {
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	select {
	case <-w.stop:
		return ErrClosed
	default:
	}
	return writeMeta(w.root, m)
}

// Exists reports whether dir holds a log: a metadata record or a
// generation directory. It changes nothing, so a caller can refuse to
// create a log where one is known to have been (see Recovered.Created)
// before Open would make one.
func Exists(dir string) (bool, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("wal: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if _, gen := parseGen(name); name == metaFile || gen && de.IsDir() {
			return true, nil
		}
	}
	return false, nil
}

// generationMissing is the damage of a log in root whose META remains and
// whose live generation does not.
func generationMissing(root string) *CorruptError {
	return corrupt(root, 0, -1, "%s records a log here, but no generation directory (%s{n}) holds it: the live generation was deleted or moved; nothing was changed, restore it or remove %s to start an empty log", metaFile, genPrefix, root)
}

// checkMeta reads the metadata record of a log whose live generation is
// gen (0: none) and returns it; without one, the record to write once the
// log is open. A record without a generation is a log that was deleted.
func (w *WAL) checkMeta(gen uint64) (m map[string]string, missing bool, err error) {
	os.Remove(filepath.Join(w.root, metaFile+tmpSuffix)) // a replacement a crash interrupted
	m, ok, err := readMeta(w.root)
	if err != nil {
		return nil, false, err
	}
	if ok && gen == 0 {
		return nil, false, generationMissing(w.root)
	}
	if !ok {
		m = w.cfg.meta
		if m == nil {
			m = map[string]string{}
		}
	}
	return m, !ok, nil
}
