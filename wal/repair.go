package wal

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Repair describes a torn tail that Open cut off the last segment: the
// write batch a crash interrupted, which was never acknowledged (its
// messages are redelivered by the ISB).
type Repair struct {
	File    string // the segment file
	Index   uint64 // log index of the first entry cut
	Offset  int64  // byte position the file was cut at
	Bytes   int64  // bytes cut
	Dropped int    // intact entries of the unacknowledged torn batch cut with it
	Reason  string // what was wrong at Offset
	// Cut lists those Dropped entries, in log order.
	Cut []CutEntry
}

// CutEntry is an intact entry that a torn-tail repair cut with its batch.
type CutEntry struct {
	Byte      int64 // byte position of its frame in the segment
	GC        bool  // a GC event: its windows stay open until the reduce closes them again
	Partition int32 // of a message entry: its ISB partition
	Offset    int64 // of a message entry: its ISB offset
}

func (t *tear) report() *Repair {
	return &Repair{File: t.file, Index: t.index, Offset: t.offset, Bytes: t.size, Dropped: t.dropped, Reason: t.reason, Cut: t.cut}
}

// checkClosed refuses what walk found when the generation records a clean
// close with marker as its last index: every entry up to it was fsync'd
// and acknowledged before Close, so a damaged one is not a torn tail (only
// a crash tears, and it tears only the batch in flight), and a log ending
// before it lost entries. Past marker lies what was appended after a later
// clean Open; a crash may have torn that.
func checkClosed(segs []segmentFile, marker uint64, found walked) error {
	if marker == 0 {
		return nil
	}
	if t := found.tear; t != nil && t.index <= marker {
		return corrupt(t.file, t.index, t.offset, "%s; the log was closed cleanly with entries up to %d (%s), so this is damage to an acknowledged entry, not a torn tail", t.reason, marker, closedFile)
	}
	if last := found.next - 1; last < marker {
		return corrupt(segs[len(segs)-1].path, found.next, found.tailSize, "the log ends after entry %d but was closed cleanly with entries up to %d (%s): acknowledged entries were removed", last, marker, closedFile)
	}
	return nil
}

// logRepair reports the torn tail t, which Open cut.
func (w *WAL) logRepair(t *tear) {
	w.cfg.log.Warn("wal: cut a torn tail (the write batch in flight at a crash, never acknowledged: the ISB redelivers its messages)",
		zap.String("segment", t.file), zap.Uint64("entry", t.index), zap.Int64("byte", t.offset), zap.Int64("bytes", t.size),
		zap.String("reason", t.reason), zap.Int("intact entries cut", t.dropped), zap.String("cut", summarizeCut(t.cut)),
		zap.Uint64("closed cleanly at entry", w.marker))
}

// summarizeCut names the cut messages by partition and offset range (a
// batch holds runs of consecutive offsets) and counts the cut GC events.
func summarizeCut(cut []CutEntry) string {
	var sb strings.Builder
	gcs := 0
	for i := 0; i < len(cut); i++ {
		c := cut[i]
		if c.GC {
			gcs++
			continue
		}
		j := i
		for j+1 < len(cut) && !cut[j+1].GC && cut[j+1].Partition == c.Partition && cut[j+1].Offset == cut[j].Offset+1 {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "p%d:%d", c.Partition, c.Offset)
		if j > i {
			sb.WriteString(".." + strconv.FormatInt(cut[j].Offset, 10))
		}
		i = j
	}
	if gcs > 0 {
		fmt.Fprintf(&sb, " +%d GC events", gcs)
	}
	return strings.TrimSpace(sb.String())
}

// cutTail truncates the torn tail off its segment and makes the cut durable.
func cutTail(t *tear) error {
	f, err := os.OpenFile(t.file, os.O_WRONLY, 0)
	if err == nil {
		err = f.Truncate(t.offset)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("wal: cut torn tail of %s at byte %d: %w", t.file, t.offset, err)
	}
	return nil
}
