package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/runnel-dev/runnel/internal/datadir"
	"github.com/runnel-dev/runnel/internal/fsutil"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/wal"
)

// layoutDirs is what a reduce vertex's WAL directory holds.
type layoutDirs struct {
	legacy     []string // replica-{r}-of-{n}: the layout before partition logs
	partitions []int    // partition-{p}
	migrating  bool     // a migration being built
	migrated   bool     // a migration built, not yet all moved into place
}

func scanLayout(dir string) (layoutDirs, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return layoutDirs{}, fmt.Errorf("reduce WAL: %w", err)
	}
	var l layoutDirs
	for _, de := range des {
		name := de.Name()
		if !de.IsDir() {
			continue
		}
		var r, n int
		switch {
		case name == walMigrating:
			l.migrating = true
		case name == walMigrated:
			l.migrated = true
		case strings.HasPrefix(name, datadir.WALPartitionPrefix):
			p, ok := datadir.ParseWALPartition(name)
			if !ok {
				continue // not one of ours
			}
			l.partitions = append(l.partitions, p)
		default:
			if k, _ := fmt.Sscanf(name, "replica-%d-of-%d", &r, &n); k == 2 && name == fmt.Sprintf("replica-%d-of-%d", r, n) {
				l.legacy = append(l.legacy, filepath.Join(dir, name))
			}
		}
	}
	return l, nil
}

// checkLayout refuses partition logs the vertex has no partition for, and
// carries logs of the replica layout over to partition logs.
func checkLayout(dir string, parts int, w vertex.Windowing, log *zap.Logger) error {
	l, err := scanLayout(dir)
	if err != nil {
		return err
	}
	if l.migrated {
		if err := finishMigration(dir, l); err != nil {
			return err
		}
		if l, err = scanLayout(dir); err != nil {
			return err
		}
	}
	for _, p := range l.partitions {
		if p >= parts {
			return &ReduceLogError{Dir: filepath.Join(dir, datadir.WALPartition(p)), Kind: ErrReduceLogLayout,
				Reason: fmt.Sprintf("a log of partition %d, but the vertex has %d partitions: its windows would be lost", p, parts)}
		}
	}
	if l.migrating {
		if err := os.RemoveAll(filepath.Join(dir, walMigrating)); err != nil {
			return fmt.Errorf("reduce WAL: remove an unfinished migration: %w", err)
		}
	}
	if len(l.legacy) == 0 {
		return nil
	}
	if len(l.partitions) > 0 {
		return &ReduceLogError{Dir: dir, Kind: ErrReduceLogLayout, Reason: fmt.Sprintf(
			"holds per-replica logs (%s) beside per-partition logs: a runnel before per-partition logs ran after one with them; "+
				"which holds the open windows cannot be told", filepath.Base(l.legacy[0]))}
	}
	return migrateReplicaLogs(dir, l.legacy, parts, w, log)
}

// legacyPart is what the replica logs held of one partition.
type legacyPart struct {
	entries   []wal.Entry
	offset    int64
	hasOffset bool
	watermark time.Time
}

// migrateReplicaLogs writes the open windows, offsets and watermarks of
// the replica logs into one new log per partition (see the layout in
// reduce_wal.go). Session ids are renumbered from 1: each replica
// numbered its own, so two replicas' ids may collide, and the new logs,
// which a later run may hand to one replica, need ids unique in the
// vertex (new sessions take ids from the clock, far above).
func migrateReplicaLogs(dir string, legacy []string, parts int, w vertex.Windowing, log *zap.Logger) error {
	byPart := make([]legacyPart, parts)
	var nextID uint64
	for _, ldir := range legacy {
		if err := readReplicaLog(ldir, byPart, &nextID); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, walMigrating)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	moved := 0
	for p := range parts {
		lp := &byPart[p]
		slices.SortStableFunc(lp.entries, func(a, b wal.Entry) int { return cmp.Compare(a.Offset, b.Offset) })
		offsets := map[int32]int64{}
		if lp.hasOffset {
			offsets[int32(p)] = lp.offset
		}
		if err := writePartitionLog(filepath.Join(tmp, datadir.WALPartition(p)), offsets, lp, partitionMeta(w, p, parts)); err != nil {
			return err
		}
		moved += len(lp.entries)
	}
	// The commit point: migrated/ is complete; a crash after it finishes
	// the move, a crash before it builds again from the replica logs.
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, walMigrated)); err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	if err := syncPath(dir); err != nil {
		return err
	}
	l, err := scanLayout(dir)
	if err != nil {
		return err
	}
	if err := finishMigration(dir, l); err != nil {
		return err
	}
	log.Info("reduce WAL carried over from per-replica logs to per-partition logs",
		zap.Strings("from", legacy), zap.Int("partitions", parts), zap.Int("open window messages", moved))
	return nil
}

// readReplicaLog adds what one replica log holds to byPart, its session
// ids renumbered from *nextID.
func readReplicaLog(ldir string, byPart []legacyPart, nextID *uint64) error {
	l, err := wal.Open(ldir)
	if err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	defer l.Close()
	rec := l.Recovered()
	layout := func(format string, args ...any) error {
		return &ReduceLogError{Dir: ldir, Kind: ErrReduceLogLayout, Reason: fmt.Sprintf(format, args...)}
	}
	for p, off := range rec.LastOffsets {
		if int(p) < 0 || int(p) >= len(byPart) {
			return layout("the log holds messages of partition %d, but the vertex has %d partitions", p, len(byPart))
		}
		lp := &byPart[p]
		lp.offset, lp.hasOffset = max(lp.offset, off), true
		if rec.Watermark.After(lp.watermark) {
			lp.watermark = rec.Watermark
		}
	}
	ids := map[uint64]uint64{}
	for e, err := range l.Replay() {
		if err != nil {
			return fmt.Errorf("reduce WAL migration: %w", err)
		}
		if int(e.Partition) < 0 || int(e.Partition) >= len(byPart) {
			return layout("an entry of partition %d, but the vertex has %d partitions", e.Partition, len(byPart))
		}
		// The entry is valid only until the loop advances: copy it.
		e.Keys = slices.Clone(e.Keys)
		e.Value = slices.Clone(e.Value)
		e.Windows = slices.Clone(e.Windows)
		for i := range e.Windows {
			if s := e.Windows[i].Session; s != 0 {
				if ids[s] == 0 {
					*nextID++
					ids[s] = *nextID
				}
				e.Windows[i].Session = ids[s]
			}
		}
		byPart[e.Partition].entries = append(byPart[e.Partition].entries, e)
	}
	return l.Close()
}

// writePartitionLog creates the log of one partition with what the
// replica logs held of it.
func writePartitionLog(pdir string, offsets map[int32]int64, lp *legacyPart, meta map[string]string) error {
	l, err := wal.Open(pdir, wal.Seed(offsets, lp.watermark), wal.Metadata(meta))
	if err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	if len(lp.entries) > 0 {
		if err := l.Append(context.Background(), lp.entries...); err != nil {
			return errors.Join(fmt.Errorf("reduce WAL migration: %s: %w", pdir, err), l.Close())
		}
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("reduce WAL migration: %s: %w", pdir, err)
	}
	return nil
}

// finishMigration moves the partition logs out of migrated/ into place,
// then removes the replica logs and migrated/; each step survives a crash
// (the next start repeats what is left).
func finishMigration(dir string, l layoutDirs) error {
	done := filepath.Join(dir, walMigrated)
	des, err := os.ReadDir(done)
	if err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	for _, de := range des {
		to := filepath.Join(dir, de.Name())
		if _, err := os.Stat(to); err == nil {
			return &ReduceLogError{Dir: to, Kind: ErrReduceLogLayout, Reason: fmt.Sprintf("exists beside the carried-over log in %s of the same name", done)}
		}
		if err := os.Rename(filepath.Join(done, de.Name()), to); err != nil {
			return fmt.Errorf("reduce WAL migration: %w", err)
		}
	}
	if err := syncPath(dir); err != nil {
		return err
	}
	for _, ldir := range l.legacy {
		if err := os.RemoveAll(ldir); err != nil {
			return fmt.Errorf("reduce WAL migration: remove the carried-over %s: %w", ldir, err)
		}
	}
	if err := os.Remove(done); err != nil {
		return fmt.Errorf("reduce WAL migration: %w", err)
	}
	return syncPath(dir)
}

// syncPath fsyncs a directory, so that the renames in it are durable.
func syncPath(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil {
		return fmt.Errorf("reduce WAL: %w", err)
	}
	return nil
}
