package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/internal/spans"
	"github.com/runnel-dev/runnel/vertex"
)

// Source is the line source [NewSource] returns: a vertex.Source of the
// lines of the files a glob matches, one message per line. It is a
// vertex.Resumable, vertex.Acker and vertex.Acknowledged (replayable on
// durable storage) and an io.Closer; see the package doc.
type Source struct {
	cfg sourceConfig
	pos position
	// lock is held by the Read in progress (replicas share the source, and
	// one reads at a time): a channel, so that a Read waiting for it ends
	// with its context.
	lock chan struct{}

	// Guarded by lock.
	files  []*tracked // the files the glob matched at the last look, sorted by path
	byPath map[string]*tracked
	cur    int       // the file of files the pass is at
	open   *openFile // the file being read, if any
	done   bool      // io.EOF was returned
	closed bool
}

// tracked is what the source knows of one file.
type tracked struct {
	path string
	id   identity // the file read at path
	off  int64    // where the next line to read starts
	seen int64    // the end of what was read: off, plus a tail without a newline
	size int64    // its size at the last look
	// skip is what was acknowledged of it, when it was first seen: the
	// lines it covers were acknowledged out of order in an earlier run, or
	// found in the pipeline's buffers, and are not read again.
	skip spans.Set
}

// openFile is the file being read, and what of it is buffered.
type openFile struct {
	t    *tracked
	f    *os.File
	buf  []byte
	r, w int   // buf[r:w] is read and not yet consumed
	base int64 // the offset in the file of buf[0]
	eof  bool  // the last read reached the end of the file
}

// readBufferBytes is the size of the first read buffer; it grows up to
// MaxLineBytes for longer lines.
const readBufferBytes = 64 << 10

// NewSource returns a source of the lines of the files that pattern
// matches (path/filepath.Match syntax, as filepath.Glob reads it), read
// file after file in path order. Each message's Value is one line, without
// its "\n" (and a "\r" before it); its ID is "{path}:{start}-{end}", the
// byte range of the line (ParseID); its event time is the time it is read.
//
//	src := file.NewSource("logs/*.jsonl", file.Follow(time.Second))
//
// A bad pattern or option, and a directory of the pattern that does not
// exist, are reported by Validate, which the pipeline calls before it
// starts.
func NewSource(pattern string, opts ...SourceOption) *Source {
	s := &Source{cfg: sourceConfig{pattern: pattern, maxLine: DefaultMaxLineBytes}, lock: make(chan struct{}, 1),
		byPath: map[string]*tracked{}}
	for _, o := range opts {
		o(&s.cfg)
	}
	return s
}

var (
	_ vertex.Source[[]byte] = (*Source)(nil)
	_ vertex.Acker[[]byte]  = (*Source)(nil)
	_ vertex.Resumable      = (*Source)(nil)
	_ vertex.Acknowledged   = (*Source)(nil)
	_ io.Closer             = (*Source)(nil)
)

// Validate reports a bad option or pattern as an *vertex.OptionError, and
// a directory of the pattern (its part before the first wildcard) that
// cannot be opened as an *Error wrapping the os error.
func (s *Source) Validate() error {
	if err := s.cfg.validate(); err != nil {
		return err
	}
	dir := filepath.Dir(s.cfg.pattern)
	for hasMeta(dir) {
		dir = filepath.Dir(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return &Error{Op: "open the directory of glob " + s.cfg.pattern, Path: dir, Offset: -1, Err: err}
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return &Error{Op: "open the directory of glob " + s.cfg.pattern, Path: dir, Offset: -1, Err: err}
	}
	return nil
}

// hasMeta reports whether path has a wildcard of filepath.Match.
func hasMeta(path string) bool {
	magic := `*?[`
	if filepath.Separator != '\\' {
		magic = `*?[\`
	}
	return strings.ContainsAny(path, magic)
}

// Resume gives the source its saved position; the pipeline calls it on
// durable storage, before the first Read. The source then saves, as the
// pipeline acknowledges lines, the byte ranges acknowledged per file (at
// most every 20ms, and at Close), and on the next run reads every line
// they do not cover and none that they do.
func (s *Source) Resume(store vertex.StateStore) error { return s.pos.resume(store) }

// Ack records that msgs, lines Read returned (in this run or, after
// Resume, in an earlier one), are acknowledged, and saves the position
// when a save is due. It does nothing unless Resume was called; an ID the
// source did not make is vertex.ErrUnknownAck.
func (s *Source) Ack(_ context.Context, msgs []vertex.Message[[]byte]) error { return s.pos.ack(msgs) }

// Acknowledged reports whether the line with this ID is acknowledged
// (see vertex.Acknowledged): the source will not read it again.
func (s *Source) Acknowledged(id string) bool { return s.pos.acknowledged(id) }

// Read returns up to max lines of one file. Without Follow it returns
// io.EOF once every file the glob matches is read to its end, the glob
// matched again and nothing new found; with Follow it waits for more.
func (s *Source) Read(ctx context.Context, max int) ([]vertex.Message[[]byte], error) {
	for {
		select {
		case s.lock <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		msgs, err := s.step(max)
		<-s.lock
		if len(msgs) > 0 || err != nil {
			return msgs, err
		}
		t := time.NewTimer(s.cfg.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// step reads on from where the pass is: lines, io.EOF, or nothing (Follow
// found nothing new: wait a poll). s.lock is held.
func (s *Source) step(max int) ([]vertex.Message[[]byte], error) {
	if s.done || s.closed {
		return nil, io.EOF
	}
	for {
		if s.open != nil {
			msgs, err := s.readLines(max)
			if len(msgs) > 0 || err != nil {
				return msgs, err
			}
			s.closeOpen() // read to its end, for now
			s.cur++
		}
		for s.cur < len(s.files) && s.files[s.cur].size <= s.files[s.cur].seen {
			s.cur++
		}
		if s.cur < len(s.files) {
			if err := s.openAt(s.files[s.cur]); err != nil {
				return nil, err
			}
			continue
		}
		more, err := s.rescan()
		if err != nil {
			return nil, err
		}
		if more {
			s.cur = 0
			continue
		}
		if !s.cfg.follow {
			s.done = true
			return nil, io.EOF
		}
		return nil, nil
	}
}

// rescan matches the glob again and looks at every file it matches:
// their sizes, and new files. It reports whether any has bytes not read
// yet. A file that no longer matches is forgotten (its position stays).
func (s *Source) rescan() (bool, error) {
	paths, err := filepath.Glob(s.cfg.pattern)
	if err != nil {
		return false, fmt.Errorf("file: glob %q: %w", s.cfg.pattern, err)
	}
	files := make([]*tracked, 0, len(paths))
	byPath := make(map[string]*tracked, len(paths))
	more := false
	for _, path := range paths {
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the glob listed it
		}
		if err != nil {
			return false, &Error{Op: "stat", Path: path, Offset: -1, Err: err}
		}
		if !fi.Mode().IsRegular() {
			continue // a directory, a device: not lines
		}
		t := s.byPath[path]
		if t == nil {
			if t, err = s.track(path, fi); err != nil {
				return false, err
			}
		} else if err := t.check(fi); err != nil {
			return false, err
		}
		t.size = fi.Size()
		t.seen = min(t.seen, max(t.off, t.size)) // a tail without newline may have shrunk
		more = more || t.size > t.seen
		files = append(files, t)
		byPath[path] = t
	}
	s.files, s.byPath = files, byPath
	return more, nil
}

// track starts to track a file the glob matched for the first time (in
// this run), from its saved position.
func (s *Source) track(path string, fi fs.FileInfo) (*tracked, error) {
	id := identityOf(fi)
	acked, saved := s.pos.of(path, id)
	t := &tracked{path: path, id: id, skip: acked}
	hi := acked.Low
	if n := len(acked.Above); n > 0 {
		hi = acked.Above[n-1].End
	}
	if saved.differs(id) {
		return nil, &Error{Op: "resume", Path: path, Offset: hi, Err: fmt.Errorf("%w: the position was saved for device %d inode %d, the path now names device %d inode %d",
			ErrReplaced, saved.Dev, saved.Ino, id.Dev, id.Ino)}
	}
	if fi.Size() < hi {
		return nil, &Error{Op: "resume", Path: path, Offset: hi, Err: fmt.Errorf("%w: %d bytes, acknowledged up to %d", ErrTruncated, fi.Size(), hi)}
	}
	t.off, _ = acked.Gap(0)
	t.seen = t.off
	return t, nil
}

// check reports a file that changed under what the source read of it:
// another file at its path, or a file shorter than where reading goes on.
func (t *tracked) check(fi fs.FileInfo) error {
	if id := identityOf(fi); t.id.differs(id) {
		return &Error{Op: "read", Path: t.path, Offset: t.off, Err: fmt.Errorf("%w: read device %d inode %d, the path now names device %d inode %d",
			ErrReplaced, t.id.Dev, t.id.Ino, id.Dev, id.Ino)}
	}
	if fi.Size() < t.off {
		return &Error{Op: "read", Path: t.path, Offset: t.off, Err: fmt.Errorf("%w: %d bytes, read up to %d", ErrTruncated, fi.Size(), t.off)}
	}
	return nil
}

// openAt opens t to read on where it stopped.
func (s *Source) openAt(t *tracked) error {
	f, err := os.Open(t.path)
	if err != nil {
		return &Error{Op: "open", Path: t.path, Offset: -1, Err: err}
	}
	fi, err := f.Stat()
	if err == nil {
		err = t.check(fi)
	} else {
		err = &Error{Op: "stat", Path: t.path, Offset: -1, Err: err}
	}
	if err != nil {
		f.Close()
		return err
	}
	s.open = &openFile{t: t, f: f, base: t.off, buf: make([]byte, min(readBufferBytes, s.cfg.maxLine+2))}
	return nil
}

// closeOpen closes the file being read.
func (s *Source) closeOpen() {
	if s.open != nil {
		s.open.f.Close() // read only: nothing to lose
		s.open = nil
	}
}

// readLines returns up to max lines of the open file, from where it
// stopped; none once it is read to its end (or to a tail without newline,
// under Follow).
func (s *Source) readLines(n int) ([]vertex.Message[[]byte], error) {
	o, t := s.open, s.open.t
	var msgs []vertex.Message[[]byte]
	var slab []byte // the values of the lines in buf, copied out of it
	emit := func(line []byte, start, end int64) error {
		line = trimCR(line)
		if len(line) > s.cfg.maxLine {
			return &Error{Op: "read", Path: t.path, Offset: start, Err: fmt.Errorf("%w: %d bytes, MaxLineBytes is %d", ErrLineTooLong, len(line), s.cfg.maxLine)}
		}
		t.off, t.seen = end, max(t.seen, end)
		if len(t.skip.Above) > 0 && t.skip.Covers(spans.Span{First: start, End: end}) {
			return nil // acknowledged in an earlier run
		}
		if cap(slab)-len(slab) < len(line) {
			slab = make([]byte, 0, len(line)+o.w-o.r)
		}
		slab = append(slab, line...)
		msgs = append(msgs, vertex.Message[[]byte]{ID: lineID(t.path, start, end), Value: slab[len(slab)-len(line) : len(slab) : len(slab)]})
		return nil
	}
	for len(msgs) < n {
		if i := bytes.IndexByte(o.buf[o.r:o.w], '\n'); i >= 0 {
			start := o.base + int64(o.r)
			line := o.buf[o.r : o.r+i]
			o.r += i + 1
			if err := emit(line, start, start+int64(i)+1); err != nil {
				return msgs, err
			}
			continue
		}
		pending := o.w - o.r
		if pending > s.cfg.maxLine+1 { // no newline yet, and already too long without "\r"
			return msgs, &Error{Op: "read", Path: t.path, Offset: o.base + int64(o.r), Err: fmt.Errorf("%w: more than %d bytes without a newline", ErrLineTooLong, s.cfg.maxLine)}
		}
		if o.eof {
			t.seen = max(t.seen, o.base+int64(o.w))
			if pending > 0 && !s.cfg.follow {
				// Without Follow the files are complete: a last line
				// without newline is a line.
				start := o.base + int64(o.r)
				line := o.buf[o.r:o.w]
				o.r = o.w
				if err := emit(line, start, start+int64(pending)); err != nil {
					return msgs, err
				}
			}
			break
		}
		if o.r > 0 {
			copy(o.buf, o.buf[o.r:o.w])
			o.base += int64(o.r)
			o.w -= o.r
			o.r = 0
		}
		if o.w == len(o.buf) {
			grown := make([]byte, min(2*len(o.buf), s.cfg.maxLine+2))
			copy(grown, o.buf[:o.w])
			o.buf = grown
		}
		got, err := o.f.ReadAt(o.buf[o.w:], o.base+int64(o.w))
		o.w += got
		switch {
		case errors.Is(err, io.EOF):
			o.eof = true
		case err != nil:
			return msgs, &Error{Op: "read", Path: t.path, Offset: o.base + int64(o.w), Err: err}
		}
	}
	return msgs, nil
}

// trimCR drops a "\r" that ends line.
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// Close closes the file being read and saves the position (if Resume was
// called); the pipeline calls it once it has stopped. It is idempotent.
func (s *Source) Close() error {
	s.lock <- struct{}{}
	s.closeOpen()
	s.closed = true
	<-s.lock
	return s.pos.save()
}
