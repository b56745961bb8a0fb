package file

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/vertex"
)

// Sink is the rotating line sink [NewSink] returns: a vertex.Sink that
// writes each message's Value as one line to numbered files of a
// directory, and makes them durable before it returns; and an io.Closer.
// See the package doc.
type Sink struct {
	cfg sinkConfig

	// mu is held while a Write appends its lines: the files are one
	// sequence. It is released while the lines are flushed to the disk,
	// so that one fdatasync covers the lines of every Write that appended
	// meanwhile (the vertex's workers write concurrently, a chunk each).
	mu       sync.Mutex
	synced   *sync.Cond // on mu: a flush to the disk ended
	started  bool
	startErr error
	lock     *os.File // the directory, locked
	seq      uint64   // the number of the file being written, or of the last one
	f        *os.File // the file being written (name(seq)+openSuffix), nil between files
	size     int64    // its bytes
	lines    int64    // its lines
	bufLines int64    // the lines in buf
	named    bool     // its directory entry is durable
	buf      []byte
	syncing  bool             // a Write is flushing to the disk, mu released
	durable  pos              // every line before it is on the disk
	broken   map[uint64]error // files given up with lines not on the disk: why
	closed   bool
}

// pos is a place in the sink's sequence of files: byte off of file seq.
type pos struct {
	seq uint64
	off int64
}

// before reports whether a comes before b.
func (a pos) before(b pos) bool { return a.seq < b.seq || a.seq == b.seq && a.off < b.off }

// writeChunk is how much the sink buffers before it writes.
const writeChunk = 1 << 20

// NewSink returns a sink writing line-delimited files into dir (created,
// durably, if missing): each message's Value and a "\n". It writes
// part-0000000001.txt.open, renames it to part-0000000001.txt once it
// rotates (RotateBytes, RotateLines) or the pipeline stops, and goes on
// with part-0000000002.txt.open; a restarted sink numbers on after the
// highest file in dir. Write returns once its lines are on the disk (the
// file fsync'd, and the directory when a file was created or renamed).
//
//	sink := file.NewSink("out", file.RotateBytes(16<<20))
func NewSink(dir string, opts ...SinkOption) *Sink {
	s := &Sink{cfg: sinkConfig{dir: dir, maxBytes: DefaultRotateBytes, prefix: "part-", suffix: ".txt"}, broken: map[uint64]error{}}
	s.synced = sync.NewCond(&s.mu)
	for _, o := range opts {
		o(&s.cfg)
	}
	return s
}

var (
	_ vertex.Sink[[]byte] = (*Sink)(nil)
	_ io.Closer           = (*Sink)(nil)
)

// Validate reports a bad option as an *vertex.OptionError.
func (s *Sink) Validate() error { return s.cfg.validate() }

// name is the final name of file number seq.
func (s *Sink) name(seq uint64) string {
	return filepath.Join(s.cfg.dir, fmt.Sprintf("%s%010d%s", s.cfg.prefix, seq, s.cfg.suffix))
}

// seqOf returns the number of a file named by the sink, open or final.
func (s *Sink) seqOf(base string) (seq uint64, open, ok bool) {
	base, open = strings.CutSuffix(base, openSuffix)
	digits, ok := strings.CutPrefix(base, s.cfg.prefix)
	if !ok {
		return 0, false, false
	}
	if digits, ok = strings.CutSuffix(digits, s.cfg.suffix); !ok || len(digits) < 10 {
		return 0, false, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, open, err == nil
}

// start creates and locks the directory, and completes the files a
// crashed run left open. s.mu is held.
func (s *Sink) start() error {
	if s.started {
		return s.startErr
	}
	s.started = true
	s.startErr = s.open()
	return s.startErr
}

func (s *Sink) open() error {
	if _, err := fsutil.MkdirAllSynced(s.cfg.dir); err != nil {
		return &Error{Op: "create directory", Path: s.cfg.dir, Offset: -1, Err: err}
	}
	lock, err := fsutil.LockDir("file", s.cfg.dir, ErrLocked, fsutil.Unsupported(ErrUnsupported, "the file sink"))
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(s.cfg.dir)
	if err != nil {
		lock.Close()
		return &Error{Op: "list", Path: s.cfg.dir, Offset: -1, Err: err}
	}
	for _, e := range entries {
		seq, open, ok := s.seqOf(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		s.seq = max(s.seq, seq)
		if open {
			if err := s.complete(seq); err != nil {
				lock.Close()
				return err
			}
		}
	}
	s.lock = lock
	return nil
}

// complete finishes a file a crashed run left open: what follows its last
// newline is a line cut by the crash, never acknowledged (a Write returns
// only once its lines are on the disk), so it is cut off; the rest is
// renamed to its final name, or removed if nothing is left.
func (s *Sink) complete(seq uint64) error {
	path := s.name(seq) + openSuffix
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return &Error{Op: "open", Path: path, Offset: -1, Err: err}
	}
	defer f.Close()
	keep, err := lastNewline(f)
	if err != nil {
		return &Error{Op: "read", Path: path, Offset: -1, Err: err}
	}
	if keep == 0 {
		if err := os.Remove(path); err != nil {
			return &Error{Op: "remove", Path: path, Offset: -1, Err: err}
		}
		return s.syncDir()
	}
	if err := f.Truncate(keep); err != nil {
		return &Error{Op: "truncate", Path: path, Offset: keep, Err: err}
	}
	if err := f.Sync(); err != nil {
		return &Error{Op: "fsync", Path: path, Offset: -1, Err: err}
	}
	if err := os.Rename(path, s.name(seq)); err != nil {
		return &Error{Op: "rename", Path: path, Offset: -1, Err: err}
	}
	return s.syncDir()
}

// lastNewline returns the size of f up to and with its last "\n".
func lastNewline(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for end := fi.Size(); end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

func (s *Sink) syncDir() error {
	if err := fsutil.SyncDir(s.cfg.dir); err != nil {
		return fmt.Errorf("file: %w", err)
	}
	return nil
}

// Write appends each message's Value as a line and returns once the lines
// are on the disk. A Value with a "\n" cannot be one line: its result is
// vertex.ResultFallback (the fallback sink gets it; without one the
// pipeline fails). On an error nothing of the batch counts as written: the
// pipeline writes it again, and the lines of it already in a file stay
// (at least once).
func (s *Sink) Write(_ context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("file: write to sink %s after Close", s.cfg.dir)
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	var res []vertex.Result
	wrote := false
	s.buf, s.bufLines = s.buf[:0], 0
	for i := range msgs {
		v := msgs[i].Value
		if bytes.IndexByte(v, '\n') >= 0 {
			if res == nil {
				res = make([]vertex.Result, len(msgs))
			}
			res[i] = vertex.ResultFallback
			continue
		}
		if s.f != nil && s.full(int64(len(s.buf)), int64(len(v))+1) {
			if err := s.rotate(); err != nil {
				return nil, err
			}
		}
		if s.f == nil {
			if err := s.create(); err != nil {
				return nil, err
			}
		}
		s.buf = append(append(s.buf, v...), '\n')
		s.bufLines++
		wrote = true
		if len(s.buf) >= writeChunk {
			if err := s.flush(); err != nil {
				return nil, err
			}
		}
	}
	if !wrote {
		return res, nil
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	if err := s.commit(pos{s.seq, s.size}); err != nil {
		return nil, err
	}
	return res, nil
}

// commit returns once every line before target is on the disk. One Write
// at a time flushes, mu released, everything appended so far; the others
// wait for it and return if it covered them. s.mu is held.
func (s *Sink) commit(target pos) error {
	for s.durable.before(target) {
		if err := s.broken[target.seq]; err != nil {
			return err
		}
		if s.syncing {
			s.synced.Wait()
			continue
		}
		f, upto, name := s.f, pos{s.seq, s.size}, !s.named
		if f == nil { // every way to nil covers target or breaks its file
			return fmt.Errorf("file: sink %s: no file to flush lines %d:%d to", s.cfg.dir, target.seq, target.off)
		}
		s.syncing = true
		s.mu.Unlock()
		err := fdatasync(f)
		if err != nil {
			err = &Error{Op: "fsync", Path: f.Name(), Offset: -1, Err: err}
		} else if name {
			err = s.syncDir()
		}
		s.mu.Lock()
		s.syncing = false
		s.synced.Broadcast()
		switch {
		case err == nil:
			if s.durable.before(upto) {
				s.durable = upto
			}
			if name && s.seq == upto.seq {
				s.named = true
			}
		case !s.durable.before(upto):
			// The file rotated meanwhile, and the rotation flushed it
			// (then closed it, which may be what failed here).
		case s.f == f:
			s.abandon(err)
			return err
		default:
			s.broken[upto.seq] = err
			return err
		}
	}
	return nil
}

// abandon gives up the file being written after a failure that leaves
// unknown what of it is on the disk: its writers not yet answered fail
// with err (the pipeline writes their lines again), and the next start
// completes it.
func (s *Sink) abandon(err error) {
	s.broken[s.seq] = err
	s.f.Close()
	s.f = nil
}

// full reports whether a line of n bytes must go to a new file, with
// pending bytes buffered for the current one.
func (s *Sink) full(pending, n int64) bool {
	if s.cfg.maxLines > 0 && s.lines+s.bufLines >= s.cfg.maxLines {
		return true
	}
	size := s.size + pending
	return s.cfg.maxBytes > 0 && size > 0 && size+n > s.cfg.maxBytes
}

// create starts the next file.
func (s *Sink) create() error {
	path := s.name(s.seq+1) + openSuffix
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &Error{Op: "create", Path: path, Offset: -1, Err: err}
	}
	s.seq++
	s.f, s.size, s.lines, s.named = f, 0, 0, false
	return nil
}

// flush writes the buffered lines to the file. On a failure the file is
// cut back to its size before them, so that no partial line stays; if
// that fails too the file is abandoned (it stays open-named, and the next
// start completes it).
func (s *Sink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	n, err := s.f.Write(s.buf)
	if err != nil {
		err = &Error{Op: "write", Path: s.f.Name(), Offset: s.size + int64(n), Err: err}
		s.undo()
		return err
	}
	s.size += int64(len(s.buf))
	s.lines += s.bufLines
	s.buf, s.bufLines = s.buf[:0], 0
	return nil
}

// undo cuts the file back to what was synced before the failed write, or
// abandons it.
func (s *Sink) undo() {
	s.buf, s.bufLines = s.buf[:0], 0
	if s.f.Truncate(s.size) == nil && s.f.Sync() == nil {
		if _, err := s.f.Seek(s.size, io.SeekStart); err == nil {
			return
		}
	}
	s.abandon(fmt.Errorf("file: %s abandoned after a failed write", s.f.Name()))
}

// rotate completes the file being written: flushed, fsync'd, renamed to
// its final name, the rename made durable. s.mu is held.
func (s *Sink) rotate() error {
	if err := s.flush(); err != nil {
		return err
	}
	f, end := s.f, pos{s.seq, s.size}
	if err := fdatasync(f); err != nil {
		err = &Error{Op: "fsync", Path: f.Name(), Offset: -1, Err: err}
		s.abandon(err)
		return err
	}
	s.f = nil
	open := f.Name()
	err := f.Close()
	if err != nil {
		err = &Error{Op: "close", Path: open, Offset: -1, Err: err}
	} else if err = os.Rename(open, s.name(s.seq)); err != nil {
		err = &Error{Op: "rename", Path: open, Offset: -1, Err: err}
	} else {
		err = s.syncDir()
	}
	if err != nil {
		// Its lines are on the disk, its name may not be: its writers
		// not yet answered fail, and the next start completes it.
		s.broken[end.seq] = err
		return err
	}
	if s.durable.before(end) {
		s.durable = end
	}
	return nil
}

// Close completes the file being written (renamed to its final name) and
// unlocks the directory; the pipeline calls it once it has stopped. It is
// idempotent.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for s.syncing {
		s.synced.Wait()
	}
	var err error
	if s.f != nil {
		err = s.rotate()
	}
	if s.lock != nil {
		s.lock.Close()
	}
	return err
}
