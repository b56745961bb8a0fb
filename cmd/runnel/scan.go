package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/internal/datadir"
	"github.com/runnel-dev/runnel/isb/mmap"
	"github.com/runnel-dev/runnel/wal"
)

// errNotRunnel is the error of a directory that is none of the three
// kinds.
var errNotRunnel = errors.New("not a runnel directory")

// scanner builds a Report with the packages' own readers: mmap.Inspect
// and mmap.Verify for topics, wal.Inspect for logs, datadir.DecodeState
// for source states. None of them locks or changes anything.
type scanner struct {
	verify bool
	r      *Report
}

// scan inspects (or verifies) dir and returns its report, status set.
func scan(command, dir string) *Report {
	r := &Report{Command: command, Dir: dir, Damage: []Damage{}, Repairs: []Repair{}}
	s := scanner{verify: command == "verify", r: r}
	if !s.verify {
		r.Totals.Records, r.Totals.DamagedRecords = -1, -1
	}
	err := s.dir(dir)
	r.Totals.Damage, r.Totals.Repairs = len(r.Damage), len(r.Repairs)
	switch {
	case err != nil:
		r.Status, r.Error = "unreadable", err.Error()
	case len(r.Damage) > 0:
		r.Status = "damaged"
	default:
		r.Status = "clean"
	}
	return r
}

// dir finds out what dir is and reads it.
func (s *scanner) dir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is a file", errNotRunnel, dir)
	}
	t, err := s.topic(dir)
	if err == nil {
		s.r.Kind, s.r.Topic = "topic", t
		return nil
	}
	if !errors.Is(err, mmap.ErrNotTopic) {
		return err
	}
	w, err := s.wal(dir)
	if err == nil {
		s.r.Kind, s.r.WAL = "wal", w
		return nil
	}
	if !errors.Is(err, wal.ErrNotLog) {
		return err
	}
	ps, err := s.data(dir)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return fmt.Errorf("%w: %s is neither a topic directory (topic.meta, partition-NNNNN/), a WAL directory (META, gen-{n}/) "+
			"nor a data directory of pipeline.MMap ({pipeline}/ holding buffers or source states, {pipeline}%s/)", errNotRunnel, dir, datadir.WALSuffix)
	}
	s.r.Kind, s.r.Pipelines = "data", ps
	return nil
}

// topic reads the topic directory dir; mmap.ErrNotTopic when it is none.
func (s *scanner) topic(dir string) (*Topic, error) {
	read := mmap.Inspect
	if s.verify {
		read = mmap.Verify
	}
	info, err := read(dir)
	if err != nil {
		return nil, err
	}
	t := &Topic{Dir: info.Dir, FormatVersion: info.FormatVersion, PartitionCount: info.PartitionCount,
		Codec: info.Codec, ElementType: info.ElementType, Partitions: []Partition{}}
	for _, p := range info.Partitions {
		out := Partition{ID: p.ID, Head: p.Head, Tail: p.Tail, Checkpoint: p.Checkpoint, Clean: p.Clean,
			Records: -1, Segments: []Segment{}, Groups: []Group{}}
		if p.Tail >= 0 {
			out.Records = p.Tail - p.Head
		}
		for _, sg := range p.Segments {
			out.Segments = append(out.Segments, Segment{File: sg.File, First: sg.First, Next: sg.Next, Sealed: sg.Sealed,
				Size: sg.Size, Disk: sg.Disk, Records: sg.Records, Damaged: sg.Damaged, End: sg.End})
			if s.verify && sg.Records >= 0 {
				s.r.Totals.Records += sg.Records
				s.r.Totals.DamagedRecords += sg.Damaged
			}
		}
		for _, g := range p.Groups {
			out.Groups = append(out.Groups, Group{Name: g.Name, Commit: g.Commit, Lag: g.Lag})
		}
		t.Partitions = append(t.Partitions, out)
	}
	for _, ce := range info.Damage {
		s.r.Damage = append(s.r.Damage, Damage{File: ce.File, Offset: ce.Offset, Reason: ce.Reason})
	}
	for _, rp := range info.Repairs {
		s.r.Repairs = append(s.r.Repairs, Repair{File: rp.File, Offset: rp.Offset, What: rp.What})
	}
	s.r.Totals.Topics++
	return t, nil
}

// wal reads the log directory dir; wal.ErrNotLog when it is none. wal's
// Inspect reads every entry: a log holds its open windows only
// (compaction), so there is no cheaper look that would still count them.
func (s *scanner) wal(dir string) (*WAL, error) {
	in, err := wal.Inspect(dir)
	if err != nil {
		return nil, err
	}
	w := &WAL{Dir: in.Dir, Generation: in.Generation, Metadata: in.Metadata, Segments: []WALSegment{},
		Entries: in.Entries, Messages: in.Messages, GCEvents: in.GCEvents, OpenMessages: in.OpenMessages,
		OpenWindows: []Window{}, LastOffsets: in.LastOffsets, ClosedAt: in.ClosedAt, Clean: in.Clean, Bytes: in.Bytes}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	if w.LastOffsets == nil {
		w.LastOffsets = map[int32]int64{}
	}
	if !in.Watermark.IsZero() {
		wm := in.Watermark.UTC()
		w.Watermark = &wm
	}
	for _, sg := range in.Segments {
		w.Segments = append(w.Segments, WALSegment{File: sg.File, First: sg.First, Entries: sg.Entries, Bytes: sg.Bytes})
	}
	for _, ow := range in.OpenWindows {
		w.OpenWindows = append(w.OpenWindows, Window{Start: ow.Start.UTC(), End: ow.End.UTC(), Session: ow.Session})
	}
	for _, err := range in.Damage {
		s.r.Damage = append(s.r.Damage, walDamage(err))
	}
	if rp := in.Repair; rp != nil {
		s.r.Repairs = append(s.r.Repairs, Repair{File: rp.File, Offset: rp.Offset, What: fmt.Sprintf(
			"entry %d: a torn tail of %d bytes (%s), the write batch a crash interrupted, never acknowledged: the next open cuts it, with %d intact entries of that batch",
			rp.Index, rp.Bytes, rp.Reason, rp.Dropped)})
	}
	for _, l := range in.Leftovers {
		s.r.Repairs = append(s.r.Repairs, Repair{File: l, Offset: -1, What: "a generation a compaction left behind: the next open removes it"})
	}
	s.r.Totals.WALs++
	s.r.Totals.WALEntries += in.Entries
	return w, nil
}

// walDamage turns one of wal.Info's damages into a Damage.
func walDamage(err error) Damage {
	if ce, ok := errors.AsType[*wal.CorruptError](err); ok {
		return Damage{File: ce.File, Offset: ce.Offset, Entry: ce.Index, Reason: ce.Reason}
	}
	if ve, ok := errors.AsType[*wal.VersionError](err); ok {
		return Damage{File: ve.File, Offset: -1, Entry: ve.Index, Reason: fmt.Sprintf("an intact entry of format version %d, which this runnel does not read", ve.Version)}
	}
	return Damage{Offset: -1, Reason: err.Error()}
}

// data reads dir as a data directory of pipeline.MMap: each {pipeline}/
// holding buffers (topics) or source states, and each {pipeline}.wal/
// holding reduce logs. It returns no pipeline when dir holds none.
func (s *scanner) data(dir string) ([]Pipeline, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ps []Pipeline
	get := func(name string) *Pipeline {
		i := slices.IndexFunc(ps, func(p Pipeline) bool { return p.Name == name })
		if i < 0 {
			ps = append(ps, Pipeline{Name: name, Buffers: []Buffer{}, SourceStates: []SourceState{}, Reduces: []Reduce{}})
			i = len(ps) - 1
		}
		return &ps[i]
	}
	// A child that cannot be read may be none of runnel's: it is an
	// error only once the directory proves to be a data directory.
	var firstErr error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if name, ok := strings.CutSuffix(e.Name(), datadir.WALSuffix); ok {
			rs, err := s.reduces(path)
			firstErr = cmp.Or(firstErr, err)
			if len(rs) > 0 {
				get(name).Reduces = rs
			}
			continue
		}
		bufs, states, err := s.pipeline(path)
		firstErr = cmp.Or(firstErr, err)
		if len(bufs)+len(states) > 0 {
			p := get(e.Name())
			p.Buffers, p.SourceStates = bufs, states
		}
	}
	if len(ps) > 0 && firstErr != nil {
		return nil, firstErr
	}
	slices.SortFunc(ps, func(a, b Pipeline) int { return strings.Compare(a.Name, b.Name) })
	return ps, nil
}

// pipeline reads {dir}/{pipeline}/: its buffers and source states.
func (s *scanner) pipeline(dir string) ([]Buffer, []SourceState, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var bufs []Buffer
	var states []SourceState
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if vertex, ok := strings.CutSuffix(e.Name(), datadir.StateSuffix); ok && e.Type().IsRegular() {
			st, err := s.sourceState(vertex, path)
			if err != nil {
				return nil, nil, err
			}
			states = append(states, st)
			continue
		}
		if !e.IsDir() {
			continue
		}
		t, err := s.topic(path)
		if errors.Is(err, mmap.ErrNotTopic) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		bufs = append(bufs, Buffer{Vertex: e.Name(), Topic: *t})
	}
	return bufs, states, nil
}

// sourceState reads a source state file.
func (s *scanner) sourceState(vertex, path string) (SourceState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return SourceState{}, err
	}
	st := SourceState{Vertex: vertex, File: path}
	d, off, reason := datadir.DecodeState(b)
	if reason != "" {
		s.r.Damage = append(s.r.Damage, Damage{File: path, Offset: int64(off), Reason: reason})
	} else {
		st.Version, st.StateBytes, st.Anchors = d.Version, len(d.State), d.Anchors
	}
	s.r.Totals.SourceStates++
	return st, nil
}

// reduces reads {dir}/{pipeline}.wal/: each reduce vertex's logs.
func (s *scanner) reduces(dir string) ([]Reduce, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	rs := []Reduce{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		vdir := filepath.Join(dir, e.Name())
		logs, err := os.ReadDir(vdir)
		if err != nil {
			return nil, err
		}
		r := Reduce{Vertex: e.Name(), Dir: vdir, Logs: []ReduceLog{}}
		for _, l := range logs {
			if !l.IsDir() {
				continue
			}
			w, err := s.wal(filepath.Join(vdir, l.Name()))
			if errors.Is(err, wal.ErrNotLog) {
				continue
			}
			if err != nil {
				return nil, err
			}
			r.Logs = append(r.Logs, ReduceLog{Name: l.Name(), WAL: *w})
		}
		// partition-10 after partition-9, as partitions go.
		// then logs of an older layout by name.
		slices.SortFunc(r.Logs, func(a, b ReduceLog) int {
			pa, oka := datadir.ParseWALPartition(a.Name)
			pb, okb := datadir.ParseWALPartition(b.Name)
			switch {
			case oka && okb:
				return cmp.Compare(pa, pb)
			case oka != okb && oka:
				return -1
			case oka != okb:
				return 1
			}
			return strings.Compare(a.Name, b.Name)
		})
		if len(r.Logs) > 0 {
			rs = append(rs, r)
		}
	}
	return rs, nil
}
