package main

import (
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The human output: one line per part, indented by containment, paths
// relative to the directory given, then the damage, the repairs and a
// summary line.

// maxWindows bounds the open windows listed per WAL (-json lists all).
const maxWindows = 20

type printer struct {
	w    io.Writer
	root string
	r    *Report
}

func writeText(w io.Writer, r *Report) {
	p := printer{w: w, root: r.Dir, r: r}
	switch r.Kind {
	case "topic":
		p.topic("", "topic "+p.rel(r.Topic.Dir), r.Topic)
	case "wal":
		p.wal("", "wal "+p.rel(r.WAL.Dir), r.WAL)
	case "data":
		fmt.Fprintf(w, "pipeline data directory %s\n", r.Dir)
		for _, pl := range r.Pipelines {
			p.pipeline(pl)
		}
	}
	if len(r.Damage) > 0 {
		fmt.Fprintf(w, "damage (%d):\n", len(r.Damage))
		for _, d := range r.Damage {
			fmt.Fprintf(w, "  %s: %s\n", p.at(d.File, d.Offset, d.Entry), d.Reason)
		}
	}
	if len(r.Repairs) > 0 {
		fmt.Fprintf(w, "repairs the next open makes, none of them damage (%d):\n", len(r.Repairs))
		for _, rp := range r.Repairs {
			fmt.Fprintf(w, "  %s: %s\n", p.at(rp.File, rp.Offset, 0), rp.What)
		}
	}
	t := r.Totals
	fmt.Fprintf(w, "%s: %s, %s, %s", r.Command, count(t.Topics, "topic"), count(t.WALs, "WAL"), count(t.SourceStates, "source state"))
	if r.Command == "verify" {
		fmt.Fprintf(w, "; %s intact, %d damaged; %s", count(int(t.Records), "record"), t.DamagedRecords, count(t.WALEntries, "WAL entry"))
	}
	fmt.Fprintf(w, "; %s, %s: %s\n", count(t.Damage, "damage"), count(t.Repairs, "repair"), r.Status)
}

// count is "n thing(s)".
func count(n int, thing string) string {
	switch {
	case n == 1 || thing == "damage":
		return fmt.Sprintf("%d %s", n, thing)
	case strings.HasSuffix(thing, "y"):
		return fmt.Sprintf("%d %sies", n, thing[:len(thing)-1])
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// rel is path relative to the directory given ("." for itself).
func (p *printer) rel(path string) string {
	if r, err := filepath.Rel(p.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// at names a place: the file, the byte and the WAL entry when known.
func (p *printer) at(file string, off int64, entry uint64) string {
	s := p.rel(file)
	if entry != 0 {
		s += fmt.Sprintf(" entry %d", entry)
	}
	if off >= 0 {
		s += fmt.Sprintf(" at byte %d", off)
	}
	return s
}

func (p *printer) line(indent, format string, args ...any) {
	fmt.Fprintf(p.w, indent+format+"\n", args...)
}

func (p *printer) topic(indent, title string, t *Topic) {
	p.line(indent, "%s: format %d, %s, codec %s, element type %s (retention and capacity are options of the open, not recorded)",
		title, t.FormatVersion, count(t.PartitionCount, "partition"), orWord(t.Codec, "unknown"), orWord(t.ElementType, "unknown"))
	for _, pt := range t.Partitions {
		span := fmt.Sprintf("offsets [%d, %d), %s", pt.Head, pt.Tail, count(int(pt.Records), "record"))
		if pt.Tail < 0 {
			span = fmt.Sprintf("offsets from %d, tail unknown", pt.Head)
		}
		ckpt := "producer checkpoint unusable"
		if pt.Checkpoint >= 0 {
			ckpt = fmt.Sprintf("producer checkpoint at %d", pt.Checkpoint)
			if pt.Clean {
				ckpt += ", closed cleanly"
			} else {
				ckpt += ", not closed cleanly"
			}
		}
		p.line(indent+"  ", "partition %d: %s, %s", pt.ID, span, ckpt)
		for _, sg := range pt.Segments {
			span := fmt.Sprintf("offsets [%d, %d)", sg.First, sg.Next)
			if sg.Next < 0 {
				span = fmt.Sprintf("offsets from %d, end unknown", sg.First)
			}
			state := "active"
			if sg.Sealed {
				state = "sealed"
			}
			size := fmt.Sprintf("%d bytes", sg.Size)
			if sg.Disk >= 0 {
				size += fmt.Sprintf(", %d on disk", sg.Disk)
			}
			checked := ""
			if sg.Records >= 0 {
				checked = fmt.Sprintf("; %d intact, %d damaged, records end at byte %d", sg.Records, sg.Damaged, sg.End)
			}
			p.line(indent+"    ", "segment %s: %s, %s, %s%s", filepath.Base(sg.File), span, state, size, checked)
		}
		for _, g := range pt.Groups {
			lag := fmt.Sprintf("lag %d", g.Lag)
			if g.Lag < 0 {
				lag = "lag unknown"
			}
			p.line(indent+"    ", "group %q: commit %d, %s", g.Name, g.Commit, lag)
		}
	}
}

// orWord is s, or word when s is empty.
func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}

func (p *printer) wal(indent, title string, w *WAL) {
	closed := "not closed cleanly"
	switch {
	case w.Clean:
		closed = fmt.Sprintf("closed cleanly at entry %d", w.ClosedAt)
	case w.ClosedAt != 0:
		closed = fmt.Sprintf("closed cleanly at entry %d, appended to since", w.ClosedAt)
	}
	p.line(indent, "%s: generation %d, %s (%s, %s), %s in %s, %d bytes, %s",
		title, w.Generation, count(w.Entries, "entry"), count(w.Messages, "message"), count(w.GCEvents, "GC event"),
		count(w.OpenMessages, "open message"), count(len(w.OpenWindows), "window"), w.Bytes, closed)
	if len(w.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(w.Metadata)) {
			kv = append(kv, k+"="+w.Metadata[k])
		}
		p.line(indent+"  ", "metadata: %s", strings.Join(kv, " "))
	}
	var offs []string
	for _, part := range slices.Sorted(maps.Keys(w.LastOffsets)) {
		offs = append(offs, fmt.Sprintf("partition %d at %d", part, w.LastOffsets[part]))
	}
	wm := "none"
	if w.Watermark != nil {
		wm = w.Watermark.Format(time.RFC3339Nano)
	}
	p.line(indent+"  ", "last offsets: %s; GC watermark %s", orWord(strings.Join(offs, ", "), "none"), wm)
	for _, sg := range w.Segments {
		p.line(indent+"  ", "segment %s: entries from %d, %d intact, %d bytes", p.rel(sg.File), sg.First, sg.Entries, sg.Bytes)
	}
	for i, ow := range w.OpenWindows {
		if i == maxWindows {
			p.line(indent+"  ", "... and %d more open windows (-json lists all)", len(w.OpenWindows)-maxWindows)
			break
		}
		session := ""
		if ow.Session != 0 {
			session = fmt.Sprintf(" session %d", ow.Session)
		}
		p.line(indent+"  ", "open window [%s, %s)%s", ow.Start.Format(time.RFC3339Nano), ow.End.Format(time.RFC3339Nano), session)
	}
}

func (p *printer) pipeline(pl Pipeline) {
	p.line("", "pipeline %s:", pl.Name)
	for _, b := range pl.Buffers {
		p.topic("  ", "buffer "+b.Vertex, &b.Topic)
	}
	for _, st := range pl.SourceStates {
		if st.Version == 0 {
			p.line("  ", "source state %s (%s): damaged", st.Vertex, p.rel(st.File))
			continue
		}
		var anchors []string
		for _, out := range slices.Sorted(maps.Keys(st.Anchors)) {
			anchors = append(anchors, fmt.Sprintf("%s %v", out, st.Anchors[out]))
		}
		p.line("  ", "source state %s (%s): version %d, %d bytes of state, anchors: %s", st.Vertex, p.rel(st.File),
			st.Version, st.StateBytes, orWord(strings.Join(anchors, ", "), "none"))
	}
	for _, r := range pl.Reduces {
		p.line("  ", "reduce %s (%s): %s", r.Vertex, p.rel(r.Dir), count(len(r.Logs), "log"))
		for _, l := range r.Logs {
			p.wal("    ", "wal "+l.Name, &l.WAL)
		}
	}
}
