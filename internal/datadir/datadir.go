// Package datadir is the layout of a data directory of pipeline.MMap
// storage, shared by package pipeline, which writes it, and cmd/runnel,
// which inspects it: the names of its parts and the format of a source
// state file. Package pipeline's doc of MMap and of its reduce WAL
// describes the layout:
//
//	{dir}/{pipeline}/{vertex}/                  an isb/mmap topic: the vertex's input buffer
//	{dir}/{pipeline}/{vertex}.source            a resumable source's state (State)
//	{dir}/{pipeline}.wal/{vertex}/partition-{p}/ a wal directory: the reduce's log of input partition p
//
// It is internal: no user imports it.
package datadir

import (
	"strconv"
	"strings"
)

const (
	// StateSuffix ends the name of a source state file beside the
	// pipeline's buffers; a vertex name has no '.', so it never collides
	// with a buffer's directory.
	StateSuffix = ".source"
	// WALSuffix ends the name of the directory of a pipeline's reduce
	// logs, beside the pipeline's directory.
	WALSuffix = ".wal"
	// WALPartitionPrefix starts the name of a reduce's log of one input
	// partition, partition-{p}.
	WALPartitionPrefix = "partition-"
	// WALMigrating and WALMigrated are where the logs of the layout
	// before partition logs (one per replica) are carried over.
	WALMigrating = "migrating.tmp"
	WALMigrated  = "migrated"
)

// WALPartition is the name of the log of input partition p.
func WALPartition(p int) string { return WALPartitionPrefix + strconv.Itoa(p) }

// ParseWALPartition returns p for a partition-{p} name, written as
// WALPartition writes it.
func ParseWALPartition(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, WALPartitionPrefix)
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(s)
	return p, err == nil && p >= 0 && WALPartition(p) == name
}
