package mmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A checkpoint is a small fixed-size file replaced atomically: written to a
// temporary file, fsync'd, renamed over the old one, and the directory
// fsync'd, so a crash leaves either the old or the new content.

const (
	checkpointMagic   uint32 = 0x434C4E52 // "RNLC"
	checkpointVersion uint32 = 1
	checkpointSize           = 56
	tmpSuffix                = ".tmp"

	producerFile = "producer.offset"
	earliestFile = "earliest.offset"
	consumerFile = "consumer.offset"
	offsetsDir   = "offsets"
)

type checkpointKind uint32

const (
	kindProducer checkpointKind = iota + 1
	kindEarliest
	kindConsumer
)

func (k checkpointKind) String() string {
	switch k {
	case kindProducer:
		return producerFile
	case kindEarliest:
		return earliestFile
	case kindConsumer:
		return consumerFile
	}
	return fmt.Sprintf("kind %d", uint32(k))
}

// checkpoint holds up to five values; their meaning depends on the kind:
// producer: tail, first offset of the tail's segment, byte position of the
// tail in it, byte position of the record before the tail (-1 when the
// segment is empty), and 1 when Close wrote it (nothing was written past
// the tail since). earliest and consumer: one offset.
type checkpoint [5]int64

func encodeCheckpoint(kind checkpointKind, v checkpoint) []byte {
	b := make([]byte, checkpointSize)
	binary.LittleEndian.PutUint32(b[0:], checkpointMagic)
	binary.LittleEndian.PutUint32(b[4:], checkpointVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(kind))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[12+8*i:], uint64(x))
	}
	binary.LittleEndian.PutUint32(b[52:], crc32.Checksum(b[:52], castagnoli))
	return b
}

func decodeCheckpoint(b []byte, kind checkpointKind) (checkpoint, string) {
	var v checkpoint
	if len(b) != checkpointSize {
		return v, fmt.Sprintf("%d bytes, want %d", len(b), checkpointSize)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != checkpointMagic {
		return v, fmt.Sprintf("magic %#x, want %#x", m, checkpointMagic)
	}
	if got, want := crc32.Checksum(b[:52], castagnoli), binary.LittleEndian.Uint32(b[52:]); got != want {
		return v, fmt.Sprintf("crc32c %#x, stored %#x", got, want)
	}
	if ver := binary.LittleEndian.Uint32(b[4:]); ver != checkpointVersion {
		return v, fmt.Sprintf("unknown checkpoint version %d (this build reads %d)", ver, checkpointVersion)
	}
	if k := checkpointKind(binary.LittleEndian.Uint32(b[8:])); k != kind {
		return v, fmt.Sprintf("holds a %v checkpoint, want %v", k, kind)
	}
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[12+8*i:]))
	}
	return v, ""
}

// readCheckpoint reads path; a missing file is fs.ErrNotExist, anything
// else wrong is a *CorruptError naming it.
func readCheckpoint(path string, kind checkpointKind) (checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return checkpoint{}, err
		}
		return checkpoint{}, fmt.Errorf("mmap: read checkpoint: %w", err)
	}
	v, reason := decodeCheckpoint(b, kind)
	if reason != "" {
		return v, corrupt(path, -1, "%s", reason)
	}
	return v, nil
}

// writeCheckpoint atomically replaces path with a checkpoint of kind.
func writeCheckpoint(path string, kind checkpointKind, v checkpoint) error {
	return writeFileAtomic(path, encodeCheckpoint(kind, v))
}

// writeFileAtomic replaces path with data: write path.tmp, fsync it,
// rename it over path and fsync the directory, so a crash leaves either
// the old or the new content.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("mmap: write %s: %w", path, err)
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
		// the directory until the next Open cleans it up.
		if rerr := os.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", tmp, rerr))
		}
		return fmt.Errorf("mmap: write %s: %w", path, err)
	}
	// After the rename tmp is gone: a failed directory fsync leaves nothing.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("mmap: write %s: %w", path, err)
	}
	return nil
}

// syncDir makes the entries of dir (creations, renames, removals) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("mmap: fsync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mmap: fsync directory %s: %w", dir, err)
	}
	return nil
}

// mkdirAllSynced creates dir and its missing parents, like os.MkdirAll, and
// fsyncs the parent of every directory it creates: fsyncs inside a new
// directory do not make its own entry durable, so without this a crash
// could lose a whole topic whose checkpoints were all fsync'd. It returns
// the directories it created, outermost first.
func mkdirAllSynced(dir string) ([]string, error) {
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
		if err := syncDir(filepath.Dir(d)); err != nil {
			return nil, err
		}
	}
	return missing, nil
}
