package main

import "time"

// The -json output: one Report, encoded by encoding/json. The package doc
// draws it; TestDocDrawsEveryField keeps the two in step.

// Report is what inspect and verify found in one directory.
type Report struct {
	Command string `json:"command"` // "inspect" or "verify"
	Dir     string `json:"dir"`     // the directory as given
	// Kind is what the directory is: "topic" (an isb/mmap topic
	// directory), "wal" (a reduce WAL directory) or "data" (a data
	// directory of pipeline.MMap); "" when it is unreadable.
	Kind string `json:"kind"`
	// Status is "clean", "damaged" or "unreadable", as the exit code
	// (0, 1, 2) says.
	Status    string     `json:"status"`
	Error     string     `json:"error,omitempty"`     // why it is unreadable
	Topic     *Topic     `json:"topic,omitempty"`     // kind "topic"
	WAL       *WAL       `json:"wal,omitempty"`       // kind "wal"
	Pipelines []Pipeline `json:"pipelines,omitempty"` // kind "data", by name
	// Damage lists every damage found, in the order found: what an open
	// refuses or a read reports.
	Damage []Damage `json:"damage"`
	// Repairs lists what the next open repairs by itself without losing
	// anything acknowledged (a torn tail a crash left, a leftover of an
	// interrupted write, a checkpoint rebuilt): none of it is damage.
	Repairs []Repair `json:"repairs"`
	Totals  Totals   `json:"totals"`
}

// Totals sums up a report.
type Totals struct {
	Topics       int `json:"topics"`
	WALs         int `json:"wals"`
	SourceStates int `json:"source_states"`
	// Records and DamagedRecords count the records of every topic that
	// pass and fail their checks; verify only (-1 after inspect, which
	// reads no record below a producer checkpoint).
	Records        int64 `json:"records"`
	DamagedRecords int64 `json:"damaged_records"`
	// WALEntries counts the intact entries of every WAL.
	WALEntries int `json:"wal_entries"`
	Damage     int `json:"damage"`
	Repairs    int `json:"repairs"`
}

// Damage is one damaged place.
type Damage struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`          // byte position in File, -1 when the whole file is concerned
	Entry  uint64 `json:"entry,omitempty"` // a WAL entry's index, when known
	Reason string `json:"reason"`          // what is wrong; a topic's damaged records name their offsets
}

// Repair is one thing the next open repairs.
type Repair struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"` // byte position in File, -1 when the whole file is concerned
	What   string `json:"what"`
}

// Topic is an isb/mmap topic directory.
type Topic struct {
	Dir string `json:"dir"`
	// What topic.meta records (zero when it is missing or damaged). The
	// retention and capacity a topic runs with are options of its open,
	// not recorded on disk; each segment records its size.
	FormatVersion  uint32      `json:"format_version"`
	PartitionCount int         `json:"partition_count"`
	Codec          string      `json:"codec"`
	ElementType    string      `json:"element_type"`
	Partitions     []Partition `json:"partitions"`
}

// Partition is one partition of a topic.
type Partition struct {
	ID         int   `json:"id"`
	Head       int64 `json:"head"`       // first retained offset
	Tail       int64 `json:"tail"`       // offset after the last record; -1 when damage leaves it unknown
	Checkpoint int64 `json:"checkpoint"` // tail producer.offset records; -1 when missing or unusable
	Clean      bool  `json:"clean"`      // producer.offset records a clean close
	// Records is Tail - Head: the offsets retained (damaged ones too);
	// -1 when the tail is unknown.
	Records  int64     `json:"records"`
	Segments []Segment `json:"segments"`
	Groups   []Group   `json:"groups"`
}

// Segment is one segment file.
type Segment struct {
	File   string `json:"file"`
	First  int64  `json:"first"` // offset of its first record
	Next   int64  `json:"next"`  // offset after its last record; -1 when unknown
	Sealed bool   `json:"sealed"`
	Size   int64  `json:"size"` // bytes of the file
	Disk   int64  `json:"disk"` // bytes it occupies on disk; -1 when not known
	// Verify only, -1 after inspect: records intact and offsets damaged,
	// and the byte after the last intact record.
	Records int64 `json:"records"`
	Damaged int64 `json:"damaged"`
	End     int64 `json:"end"`
}

// Group is a consumer group's commit in a partition.
type Group struct {
	Name   string `json:"name"`
	Commit int64  `json:"commit"` // everything below is done
	Lag    int64  `json:"lag"`    // tail - commit; -1 when the tail is unknown
}

// WAL is a reduce WAL directory.
type WAL struct {
	Dir        string            `json:"dir"`
	Generation uint64            `json:"generation"` // n of the live generation gen-{n}
	Metadata   map[string]string `json:"metadata"`   // a reduce records its partition and windowing
	Segments   []WALSegment      `json:"segments"`
	// Intact entries, of every kind and by kind.
	Entries  int `json:"entries"`
	Messages int `json:"messages"`
	GCEvents int `json:"gc_events"`
	// OpenMessages are the messages of windows no GC event closed: what a
	// restart replays; OpenWindows those windows.
	OpenMessages int      `json:"open_messages"`
	OpenWindows  []Window `json:"open_windows"`
	// LastOffsets is the highest offset logged per input partition.
	LastOffsets map[int32]int64 `json:"last_offsets"`
	Watermark   *time.Time      `json:"watermark,omitempty"` // highest watermark a GC event carried; absent when none
	ClosedAt    uint64          `json:"closed_at"`           // last entry a clean close recorded, 0 when none
	Clean       bool            `json:"clean"`               // closed cleanly, nothing appended since
	Bytes       int64           `json:"bytes"`               // of every file in the directory
}

// WALSegment is one segment file of a WAL's live generation.
type WALSegment struct {
	File    string `json:"file"`
	First   uint64 `json:"first"`   // index of its first entry
	Entries int    `json:"entries"` // intact entries
	Bytes   int64  `json:"bytes"`
}

// Window is an open window of a WAL: [start, end), a session's id.
type Window struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Session uint64    `json:"session,omitempty"`
}

// Pipeline is what a data directory holds of one pipeline.
type Pipeline struct {
	Name         string        `json:"name"`
	Buffers      []Buffer      `json:"buffers"`       // {dir}/{pipeline}/{vertex}/, by vertex
	SourceStates []SourceState `json:"source_states"` // {dir}/{pipeline}/{vertex}.source, by vertex
	Reduces      []Reduce      `json:"reduces"`       // {dir}/{pipeline}.wal/{vertex}/, by vertex
}

// Buffer is the input buffer of a vertex: a topic.
type Buffer struct {
	Vertex string `json:"vertex"`
	Topic  Topic  `json:"topic"`
}

// SourceState is a resumable source's saved position.
type SourceState struct {
	Vertex     string `json:"vertex"`
	File       string `json:"file"`
	Version    uint32 `json:"version"`     // of the file; 0 when damaged
	StateBytes int    `json:"state_bytes"` // length of the source's own state
	// Anchors are, per output buffer, an offset per partition at or below
	// every record the state does not cover: where a restart looks for
	// what the source wrote after saving it.
	Anchors map[string][]int64 `json:"anchors,omitempty"`
}

// Reduce is the WAL directory of a reduce vertex: one log per input
// partition.
type Reduce struct {
	Vertex string      `json:"vertex"`
	Dir    string      `json:"dir"`
	Logs   []ReduceLog `json:"logs"` // by name
}

// ReduceLog is one log of a reduce vertex.
type ReduceLog struct {
	Name string `json:"name"` // partition-{p}, or a log of an older layout
	WAL  WAL    `json:"wal"`
}
