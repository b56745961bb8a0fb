package mmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
)

// A checkpoint is a small fixed-size file replaced atomically
// (fsutil.WriteFileAtomic: written to a temporary file, fsync'd, renamed
// over the old one, and the directory fsync'd), so a crash leaves either
// the old or the new content.

const (
	checkpointMagic   uint32 = 0x434C4E52 // "RNLC"
	checkpointVersion uint32 = 1
	checkpointSize           = 56
	tmpSuffix                = fsutil.TempSuffix // also of segments and partitions being created

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
	binary.LittleEndian.PutUint32(b[52:], crc32c.Checksum(b[:52]))
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
	if got, want := crc32c.Checksum(b[:52]), binary.LittleEndian.Uint32(b[52:]); got != want {
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
	if err := fsutil.WriteFileAtomic(path, encodeCheckpoint(kind, v)); err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	return nil
}

// syncDir is fsutil.SyncDir with the package's prefix: its error reads
// "mmap: fsync directory {dir}: ...".
func syncDir(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	return nil
}
