package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/internal/spans"
	"github.com/runnel-dev/runnel/vertex"
)

// saveEvery is the most often the source saves its position from Ack: a
// save writes and fsyncs a file, and a position saved late only makes the
// pipeline read back further what was written after it (a clean stop saves
// at Close).
const saveEvery = 20 * time.Millisecond

// positionVersion is the version of the stored position.
const positionVersion = 1

// position is what the pipeline acknowledged of each file, byte ranges of
// whole lines (internal/spans): the source saves it, and a resumed source
// reads every line of a file it does not cover and none that it does.
type position struct {
	mu       sync.Mutex
	store    vertex.StateStore // nil until Resume: nothing is kept
	files    map[string]*filePos
	dirty    bool // acknowledged since the last save
	lastSave time.Time
}

// filePos is the position in one file.
type filePos struct {
	id    identity  // the file the ranges are of
	acked spans.Set // byte offsets acknowledged
}

// The stored position is JSON, so that an operator can read where the
// source is ({dir}/{pipeline}/{vertex}.source on mmap storage):
//
//	{"version":1,"files":[{"path":"in/a.log","dev":2049,"ino":131,"acked":1024,"above":[[2048,4096]]}]}
//
// acked is the offset below which every byte is acknowledged, above the
// ranges acknowledged past it out of order.
type storedPosition struct {
	Version int          `json:"version"`
	Files   []storedFile `json:"files"`
}

type storedFile struct {
	Path string `json:"path"`
	identity
	Acked int64      `json:"acked"`
	Above [][2]int64 `json:"above,omitempty"`
}

// resume loads the saved position. A file it names that no longer exists
// is forgotten: a path is read again from its start only when a new file
// appears there (see the package doc).
func (p *position) resume(store vertex.StateStore) error {
	b, ok, err := store.Load()
	if err != nil {
		return fmt.Errorf("file: load position: %w", err)
	}
	files := map[string]*filePos{}
	if ok {
		var st storedPosition
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("file: stored position is not JSON: %w", err)
		}
		if st.Version != positionVersion {
			return fmt.Errorf("file: stored position has version %d, want %d", st.Version, positionVersion)
		}
		for _, f := range st.Files {
			set := spans.Set{Low: f.Acked}
			prev := f.Acked
			for _, s := range f.Above {
				if s[0] <= prev || s[1] <= s[0] {
					return fmt.Errorf("file: stored position of %s: range [%d, %d) does not follow %d", f.Path, s[0], s[1], prev)
				}
				set.Above = append(set.Above, spans.Span{First: s[0], End: s[1]})
				prev = s[1]
			}
			if _, err := os.Stat(f.Path); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			files[f.Path] = &filePos{id: f.identity, acked: set}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.store, p.files, p.lastSave = store, files, time.Now()
	return nil
}

// resumed reports whether Resume gave the position a store.
func (p *position) resumed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.store != nil
}

// of returns what is acknowledged of path and the identity recorded for
// it (zero when none), as a copy, and records id when none was.
func (p *position) of(path string, id identity) (spans.Set, identity) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store == nil {
		return spans.Set{}, identity{}
	}
	f := p.files[path]
	if f == nil {
		f = &filePos{}
		p.files[path] = f
	}
	if f.id == (identity{}) && id != (identity{}) {
		f.id, p.dirty = id, true
	}
	return f.acked.Clone(), f.id
}

// ack records the lines of msgs as acknowledged and saves when a save is
// due. Consecutive lines of one file are added as one range.
func (p *position) ack(msgs []vertex.Message[[]byte]) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store == nil {
		return nil
	}
	var path string
	var run spans.Span
	for i := 0; i <= len(msgs); i++ {
		var mp string
		var s spans.Span
		if i < len(msgs) {
			var err error
			if mp, s.First, s.End, err = ParseID(msgs[i].ID); err != nil {
				return err
			}
			if mp == path && s.First == run.End {
				run.End = s.End
				continue
			}
		}
		if run.End > run.First {
			f := p.files[path]
			if f == nil {
				f = &filePos{}
				p.files[path] = f
			}
			if f.acked.Add(run) {
				p.dirty = true
			}
		}
		path, run = mp, s
	}
	if p.dirty && time.Since(p.lastSave) >= saveEvery {
		return p.saveLocked()
	}
	return nil
}

// acknowledged reports whether the line the ID names is acknowledged.
func (p *position) acknowledged(id string) bool {
	path, start, end, err := ParseID(id)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.files[path]
	return f != nil && f.acked.Covers(spans.Span{First: start, End: end})
}

// save saves the position, if Resume gave it a store.
func (p *position) save() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.store == nil {
		return nil
	}
	return p.saveLocked()
}

func (p *position) saveLocked() error {
	st := storedPosition{Version: positionVersion, Files: make([]storedFile, 0, len(p.files))}
	for path, f := range p.files {
		sf := storedFile{Path: path, identity: f.id, Acked: f.acked.Low}
		for _, s := range f.acked.Above {
			sf.Above = append(sf.Above, [2]int64{s.First, s.End})
		}
		st.Files = append(st.Files, sf)
	}
	slices.SortFunc(st.Files, func(a, b storedFile) int { return strings.Compare(a.Path, b.Path) })
	b, err := json.Marshal(st)
	if err == nil {
		err = p.store.Save(b)
	}
	if err != nil {
		return fmt.Errorf("file: save position of %d files: %w", len(p.files), err)
	}
	p.dirty, p.lastSave = false, time.Now()
	return nil
}
