package mmap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/runnel-dev/runnel/internal/crc32c"
	"github.com/runnel-dev/runnel/internal/fsutil"
)

// The topic metadata file, {dir}/{topic}/topic.meta, records at creation
// what the bytes of the topic mean, so that an open asking for something
// else is refused instead of misreading them: a different codec or element
// type decodes wrong values, a different partition count moves keyed items
// to other partitions. It is written once, atomically, before any
// partition, and never changed.
//
//	+--------+---------+------------+----------+-------+----------+------+---------+
//	| "RNLT" | format  | partitions | len u16  | codec | len u16  | type | crc32c  |
//	| u32    | version | u32        |          | name  |          | name | of all  |
//	+--------+---------+------------+----------+-------+----------+------+---------+
//	 0        4         8            12

const (
	metaFile             = "topic.meta"
	metaMagic     uint32 = 0x544C4E52 // "RNLT"
	formatVersion uint32 = 1          // of the whole topic: meta, segments, checkpoints
)

// metaMissing is the reason of the damage of a topic with partitions and
// no topic.meta: it was not created by this format.
const metaMissing = "missing, but the topic has partition directories (written by an older format, or the file was deleted)"

// topicMeta is what topic.meta holds.
type topicMeta struct {
	version    uint32
	partitions int
	codec      string // codec.Codec.Name()
	elem       string // typeName of the element type
}

func (m topicMeta) encode() []byte {
	b := binary.LittleEndian.AppendUint32(nil, metaMagic)
	b = binary.LittleEndian.AppendUint32(b, m.version)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.partitions))
	for _, s := range []string{m.codec, m.elem} {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
}

func decodeTopicMeta(b []byte) (topicMeta, string) {
	var m topicMeta
	if len(b) < 4+12+4 {
		return m, fmt.Sprintf("%d bytes is too short", len(b))
	}
	body := b[:len(b)-4]
	if got, want := crc32c.Checksum(body), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return m, fmt.Sprintf("crc32c %#x, stored %#x", got, want)
	}
	if mg := binary.LittleEndian.Uint32(body); mg != metaMagic {
		return m, fmt.Sprintf("magic %#x, want %#x", mg, metaMagic)
	}
	m.version = binary.LittleEndian.Uint32(body[4:])
	m.partitions = int(binary.LittleEndian.Uint32(body[8:]))
	rest := body[12:]
	for _, s := range []*string{&m.codec, &m.elem} {
		if len(rest) < 2 || len(rest) < 2+int(binary.LittleEndian.Uint16(rest)) {
			return m, "names run past the end of the file"
		}
		n := int(binary.LittleEndian.Uint16(rest))
		*s, rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != 0 {
		return m, fmt.Sprintf("%d bytes after the names", len(rest))
	}
	return m, ""
}

// typeName names T as precisely as reflection allows: the import path and
// name of a named type, the type literal otherwise.
func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// checkMeta compares the stored metadata of the topic with what this open
// asks for, writing it when the topic is new. hasPartitions says whether
// partition directories exist: a topic with partitions and no metadata
// was not created by this format.
func (b *Backend[T]) checkMeta(partitions int, hasPartitions bool) error {
	asked := topicMeta{version: formatVersion, partitions: partitions, codec: b.cfg.codec.Name(), elem: typeName[T]()}
	path := filepath.Join(b.topicDir, metaFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if hasPartitions {
			return corrupt(path, -1, metaMissing)
		}
		if err := fsutil.WriteFileAtomic(path, asked.encode()); err != nil {
			return fmt.Errorf("mmap: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("mmap: read %s: %w", path, err)
	}
	stored, reason := decodeTopicMeta(data)
	if reason != "" {
		return corrupt(path, -1, "%s", reason)
	}
	mismatch := func(field string, s, a any) error {
		return &MismatchError{File: path, Field: field, Stored: fmt.Sprint(s), Asked: fmt.Sprint(a)}
	}
	switch {
	case stored.version != asked.version:
		return mismatch("format version", stored.version, asked.version)
	case stored.partitions != asked.partitions:
		return mismatch("partition count", stored.partitions, asked.partitions)
	case stored.codec != asked.codec:
		return mismatch("codec", stored.codec, asked.codec)
	case stored.elem != asked.elem:
		return mismatch("element type", stored.elem, asked.elem)
	}
	return nil
}
