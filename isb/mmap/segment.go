package mmap

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/runnel-dev/runnel/internal/fsutil"
)

// segment is one memory-mapped segment file.
type segment struct {
	first int64
	path  string
	size  int // bytes in the file
	// data maps the whole file shared read-write. A sealed segment found
	// by Open is mapped on its first read (under mu), so that opening
	// costs one header read per segment; the active segment is mapped
	// before it is published and stays mapped.
	data []byte
	// w is the file the appender writes records with (pwrite) and flushes
	// (fdatasync): opened by createSegment, or on the first write to a
	// recovered segment; closed by seal and unmap. Guarded by mu.
	w *os.File

	// next is the offset after the last record once sealed (unsealed
	// while active). Only the appender (under the partition's flushMu)
	// and recovery use it; readers take a segment's end from the first
	// offset of the segment after it.
	next int64

	// mu guards the position index. Readers build the part recovered from
	// disk lazily; the appender adds what it writes.
	mu sync.Mutex
	// lazy holds positions of offsets first, first+1, ... below
	// eagerFirst, found by scanning from the segment start on demand.
	lazy    []uint32
	lazyEnd int // position after the last lazily indexed record
	// lazyLimit is where the records below eagerFirst end at the latest
	// (the producer checkpoint's position in its segment, else the file's
	// end): resynchronising after a damaged record searches no further.
	lazyLimit int
	// eager holds positions of offsets eagerFirst, eagerFirst+1, ...,
	// known without scanning (written in this process or scanned by
	// recovery).
	eagerFirst int64
	eager      []uint32

	// readOnly makes ensureMapped read the written data instead of
	// mapping the file (Inspect: read permission suffices, and nothing is
	// mapped writable).
	readOnly bool
}

var pageSize = os.Getpagesize()

// createSegment creates a preallocated segment of size bytes for offsets
// from first, under a temporary name; publish renames it into place. Its
// header is durable before it returns.
func createSegment(dir string, first, size int64) (*segment, error) {
	path := filepath.Join(dir, segmentFileName(first))
	f, err := os.OpenFile(path+tmpSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mmap: create segment: %w", err)
	}
	fail := func(err error) (*segment, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("mmap: create segment %s: %w", f.Name(), err)
	}
	if err := preallocate(f, 0, size); err != nil {
		return fail(err)
	}
	var hdr [segmentHeaderSize]byte
	segmentHeader{first: first, next: unsealed, size: uint32(size)}.encode(hdr[:])
	if _, err := f.WriteAt(hdr[:], 0); err != nil {
		return fail(err)
	}
	if err := fsutil.Fdatasync(f); err != nil {
		return fail(err)
	}
	data, err := mapFile(f, size)
	if err != nil {
		return fail(err)
	}
	// f stays open: the appender writes and flushes the segment with it
	// (it survives publish's rename).
	return &segment{first: first, path: path, size: int(size), data: data, w: f, next: unsealed, eagerFirst: first, lazyEnd: segmentHeaderSize, lazyLimit: int(size)}, nil
}

// publish renames a created segment to its final name and makes the name
// durable.
func (s *segment) publish() error {
	if err := os.Rename(s.path+tmpSuffix, s.path); err != nil {
		return fmt.Errorf("mmap: publish segment: %w", err)
	}
	return syncDir(filepath.Dir(s.path))
}

// discard unmaps and removes a created segment that was never published.
func (s *segment) discard() {
	s.unmap()
	os.Remove(s.path + tmpSuffix)
}

// openSegment checks the header of an existing segment file; it maps the
// file only on first use (ensureMapped).
func openSegment(path string, first int64) (*segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mmap: open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mmap: open segment: %w", err)
	}
	if st.Size() < MinSegmentSize || st.Size() > MaxSegmentSize {
		return nil, corrupt(path, -1, "file size %d is outside [%d, %d]", st.Size(), MinSegmentSize, int64(MaxSegmentSize))
	}
	var hdr [segmentHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return nil, fmt.Errorf("mmap: read segment header of %s: %w", path, err)
	}
	h, reason := decodeSegmentHeader(hdr[:])
	if reason == "" && h.first != first {
		reason = fmt.Sprintf("header says the segment starts at offset %d, its name says %d", h.first, first)
	}
	if reason != "" {
		return nil, corrupt(path, 0, "%s", reason)
	}
	if int64(h.size) != st.Size() {
		// Records past the end of a truncated file are lost, and a crash
		// never resizes a segment: this is damage, whatever the records
		// left say.
		return nil, corrupt(path, min(st.Size(), int64(h.size)), "the file is %d bytes but was created with %d: truncated or extended", st.Size(), h.size)
	}
	// The index of a recovered segment is built on demand by readers;
	// recovery moves eagerFirst to where its scan began.
	eagerFirst := h.next
	if h.next == unsealed {
		eagerFirst = first
	}
	return &segment{first: first, path: path, size: int(st.Size()), next: h.next, eagerFirst: eagerFirst, lazyEnd: segmentHeaderSize, lazyLimit: int(st.Size())}, nil
}

// ensureMapped maps the segment if it is not yet. Readers call it under
// s.mu; recovery before the partition is shared.
func (s *segment) ensureMapped() error {
	if s.data != nil {
		return nil
	}
	if s.readOnly {
		return s.readData()
	}
	f, err := os.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mmap: map segment: %w", err)
	}
	defer f.Close()
	data, err := mapFile(f, int64(s.size))
	if err != nil {
		return err // names the segment already
	}
	s.data = data
	return nil
}

// readData sets s.data to a copy of the segment's bytes up to where its
// written data ends (the first hole, as dataEnd finds it): the rest is a
// hole that holds no record. Inspect reads segments so, needing only read
// permission, and never reads a hole, which a full tmpfs may fault on.
func (s *segment) readData() error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("mmap: read segment: %w", err)
	}
	defer f.Close()
	end, err := seekHole(f, 0)
	if testNoHoles || err != nil || end < segmentHeaderSize || end > int64(s.size) {
		end = int64(s.size)
	}
	data := make([]byte, end)
	if _, err := f.ReadAt(data, 0); err != nil {
		return fmt.Errorf("mmap: read segment %s: %w", s.path, err)
	}
	s.data = data
	return nil
}

// preallocate sizes f to off+n bytes with ftruncate: the new range is a
// hole that reads as zeros and costs no disk until written. It never
// writes zeros: pages written with zeros make every later flush write far
// more than the new records. fallocate would reserve the blocks, but its
// unwritten extents must be converted on every flush, which measured
// slower than holes (each against write(2)+fdatasync: docs/benchmarks.md).
// The price of holes is that a write on a full disk fails (ENOSPC) where
// a preallocated block would have been there; the write's error fails the
// partition.
func preallocate(f *os.File, off, n int64) error {
	return f.Truncate(off + n)
}

// guarded runs f, turning a memory fault on a mapping (a segment file
// truncated by someone else under a reader, a hole that a full tmpfs cannot
// supply a page for) into a *FaultError instead of a crash of the process.
// locate names the segment whose mapping holds the faulting address.
func guarded(f func() error, locate func(addr uintptr) (string, int64)) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			fe := &FaultError{Offset: -1, Addr: fault.Addr()}
			fe.File, fe.Offset = locate(fe.Addr)
			err = fe
		}
	}()
	return f()
}

// locateIn returns the segment of segs whose mapping holds addr, and the
// byte position there ("", -1 when none does).
func locateIn(segs []*segment, addr uintptr) (string, int64) {
	for _, s := range segs {
		s.mu.Lock()
		data := s.data
		s.mu.Unlock()
		if len(data) == 0 {
			continue
		}
		if base := uintptr(unsafe.Pointer(unsafe.SliceData(data))); addr >= base && addr < base+uintptr(len(data)) {
			return s.path, int64(addr - base)
		}
	}
	return "", -1
}

// testNoHoles, set by a test, makes dataEnd report no holes, as a file
// system without SEEK_HOLE does.
var testNoHoles bool

// dataEnd returns where the data around or after byte pos ends: the start
// of the next hole, or the file's end. Records lie only in data: the rest
// of a segment is a hole (preallocated by ftruncate, or punched by
// resetTail), and a crash leaves nothing intact after a torn record. So
// recovery looks for intact records after a damaged one only up to here,
// and never reads (nor fills the page cache with) the empty rest of a
// large segment. A file system that reports no holes yields the file's end.
func (s *segment) dataEnd(pos int) int {
	if testNoHoles {
		return len(s.data)
	}
	f, err := os.Open(s.path)
	if err != nil {
		return len(s.data)
	}
	defer f.Close()
	end, err := seekHole(f, int64(pos))
	if err != nil || end > int64(len(s.data)) || end < int64(pos) {
		return len(s.data)
	}
	return int(end)
}

// Records are written with pwrite, not stored through the mapping, which
// only readers use. A store to a shared mapping dirties the page through
// its page table: the first store after each flush faults (the kernel
// write-protects a page when it cleans it), and cleaning the page on
// flush must take the write permission back from every CPU that may cache
// it, an inter-processor interrupt per page (measured here: page faults
// and TLB shootdowns were a third of a durable pipeline's CPU). pwrite
// copies into the same page cache the mapping shows, so readers see the
// records all the same (Linux and macOS have one page cache), and a flush
// cleans pages no page table maps writable. A full disk is an ENOSPC
// error of the write instead of a fault on the mapping.

// file returns s.w, opening the segment's file if it is not open.
func (s *segment) file() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("mmap: open segment for writing: %w", err)
		}
		s.w = f
	}
	return s.w, nil
}

// writeAt writes b at byte pos of the segment.
func (s *segment) writeAt(b []byte, pos int) error {
	if len(b) == 0 {
		return nil
	}
	f, err := s.file()
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, int64(pos)); err != nil {
		return fmt.Errorf("mmap: write %s: %w", s.path, err)
	}
	return nil
}

// sync flushes the bytes written to [from, to) to disk, with what else
// of the file is dirty (only the active segment is written).
func (s *segment) sync(from, to int) error {
	if to <= from {
		return nil
	}
	f, err := s.file()
	if err != nil {
		return err
	}
	if err := fsutil.Fdatasync(f); err != nil {
		return fmt.Errorf("mmap: fdatasync %s: %w", s.path, err)
	}
	return nil
}

// seal records in the header that the segment ends before offset next,
// flushes the header and closes the file written with: a sealed segment
// is only read.
func (s *segment) seal(next int64) error {
	var hdr [segmentHeaderSize]byte
	segmentHeader{first: s.first, next: next, size: uint32(s.size)}.encode(hdr[:])
	if err := s.writeAt(hdr[:], 0); err != nil {
		return err
	}
	if err := s.sync(0, segmentHeaderSize); err != nil {
		return err
	}
	s.next = next
	s.closeFile()
	return nil
}

// closeFile closes the file written with, if open.
func (s *segment) closeFile() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
}

func (s *segment) unmap() {
	s.closeFile()
	if s.data != nil {
		unmapFile(s.data)
		s.data = nil
	}
}

// addPositions indexes records the appender wrote at offsets
// eagerFirst+len(eager)...
func (s *segment) addPositions(pos []uint32) {
	s.mu.Lock()
	s.eager = append(s.eager, pos...)
	s.mu.Unlock()
}

// truncatePositions forgets eager positions of offsets >= end (records that
// were written but never published).
func (s *segment) truncatePositions(end int64) {
	s.mu.Lock()
	if n := end - s.eagerFirst; n >= 0 && n < int64(len(s.eager)) {
		s.eager = s.eager[:n]
	}
	s.mu.Unlock()
}

// position returns the byte position of the record at offset, which the
// caller knows is below the segment's end. Below eagerFirst it scans from
// the last known record, checking every record on the way. A damaged
// record does not stop the scan: it is indexed where it should be and the
// scan resynchronises on the next intact record (findRecord), so reading
// the damaged offset fails its checks and every intact record after it
// stays readable.
func (s *segment) position(offset int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureMapped(); err != nil {
		return 0, err
	}
	if offset >= s.eagerFirst {
		i := offset - s.eagerFirst
		if i >= int64(len(s.eager)) {
			return 0, fmt.Errorf("mmap: internal: offset %d not indexed in %s", offset, s.path)
		}
		return int(s.eager[i]), nil
	}
	for o := s.first + int64(len(s.lazy)); o <= offset; {
		_, next, _, reason := decodeRecord(s.data, s.lazyEnd, o)
		if reason == "" {
			s.lazy = append(s.lazy, uint32(s.lazyEnd))
			s.lazyEnd = next
			o++
			continue
		}
		// The eager index starts at eagerFirst: a record found there
		// ends the lazy part.
		at, found, ok := findRecord(s.data[:s.lazyLimit], s.lazyEnd, o, s.eagerFirst+1)
		if !ok {
			// Nothing intact up to the eager part: every offset left
			// reads as the damaged record.
			at, found = s.lazyEnd, s.eagerFirst
		}
		s.lazy = appendDamaged(s.lazy, s.lazyEnd, at, found-o)
		s.lazyEnd, o = at, found
	}
	return int(s.lazy[offset-s.first]), nil
}
