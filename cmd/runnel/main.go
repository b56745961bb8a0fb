// Command runnel is the operator's tool for runnel's data on disk: it
// shows and checks isb/mmap topic directories, reduce WAL directories and
// data directories of pipeline.MMap, without opening them. It takes no
// lock and writes nothing, so it may look at a directory a running process
// has open (what it shows of the tail may then be moving: a torn record
// there is a write in progress).
//
// Usage:
//
//	runnel inspect [-json] <dir>
//	runnel verify [-json] <dir>
//
// The directory is one of:
//
//   - a topic directory, {dir}/{topic} of isb/mmap: its partitions, their
//     segments with offset ranges and sizes, head and tail offsets, the
//     producer checkpoint, consumer groups with their commits and lag, and
//     what topic.meta records (format, partition count, codec, element
//     type; retention and capacity are options of the open, not recorded);
//   - a WAL directory of package wal (a reduce's log of one input
//     partition): its entries by kind, the messages of open windows and
//     those windows, the last offset per partition, the GC watermark,
//     whether it was closed cleanly, its size;
//   - a data directory of pipeline.MMap(dir): per pipeline, the input buffer
//     of each vertex ({pipeline}/{vertex}/, a topic), each resumable
//     source's state ({pipeline}/{vertex}.source) and each reduce's logs
//     ({pipeline}.wal/{vertex}/partition-{p}/).
//
// Any other directory is refused with an error naming it (exit code 2).
//
// inspect reads what an open reads: for a topic, the checkpoints, one
// header per segment and the records past the producer checkpoint (its
// cost does not grow with the log); a WAL and a source state whole. verify
// reads every record of every topic besides and checks it (length,
// crc32c, offset, end marker), so that a damaged record below the producer
// checkpoint is found; the intact records after a damaged one are counted.
// Both decide with the storage packages' own code (mmap.Inspect,
// mmap.Verify, wal.Inspect), so they say what the next open will do: what
// it refuses or a read reports is damage, what it repairs by itself
// without losing anything acknowledged (a torn tail a crash left, a
// leftover of an interrupted write, a checkpoint it rebuilds from the
// checksummed records) is a repair, listed apart and no damage.
//
// Exit codes: 0 clean (repairs may be pending), 1 damaged (each damage
// named: file, byte, WAL entry when known, what is wrong), 2 unreadable
// (no such directory, no permission, not a runnel directory, a bad
// command line).
//
// # Output
//
// By default a human reads it: one line per partition, segment, group,
// log and state, paths relative to the directory given, then the damage,
// the repairs and a summary line. With -json it is one JSON object, a
// Report, whose fields are these (a number -1 means "not known"; the
// record counts of segments are -1 after inspect, which does not read
// them):
//
//	Report {
//	  "command": "inspect" | "verify",
//	  "dir": string,                      the directory given
//	  "kind": "topic" | "wal" | "data" | "",  "" when unreadable
//	  "status": "clean" | "damaged" | "unreadable",  exit code 0, 1, 2
//	  "error": string,                    why unreadable (omitted otherwise)
//	  "topic": Topic,                     kind "topic"
//	  "wal": WAL,                         kind "wal"
//	  "pipelines": [Pipeline],            kind "data", by name
//	  "damage": [Damage],                 in the order found
//	  "repairs": [Repair],
//	  "totals": {"topics", "wals", "source_states", "wal_entries", "damage", "repairs": int,
//	             "records", "damaged_records": int (verify; -1 after inspect)}
//	}
//	Damage {"file": string, "offset": int (byte), "entry": int (WAL entry index, omitted when unknown), "reason": string}
//	Repair {"file": string, "offset": int (byte), "what": string}
//	Topic {"dir": string, "format_version": int, "partition_count": int, "codec": string,
//	       "element_type": string, "partitions": [Partition]}
//	Partition {"id", "head", "tail", "checkpoint", "records": int, "clean": bool,
//	           "segments": [Segment], "groups": [Group]}
//	  head: first retained offset; tail: offset after the last record; checkpoint: the
//	  tail producer.offset records; records: tail - head; clean: closed cleanly
//	Segment {"file": string, "first", "next": int (offsets [first, next)), "sealed": bool,
//	         "size", "disk": int (bytes, and bytes allocated on disk),
//	         "records", "damaged": int (intact records, damaged offsets), "end": int (byte after the last record)}
//	Group {"name": string, "commit": int, "lag": int}
//	WAL {"dir": string, "generation": int, "metadata": {string: string}, "segments": [WALSegment],
//	     "entries", "messages", "gc_events", "open_messages": int, "open_windows": [Window],
//	     "last_offsets": {partition: offset}, "watermark": RFC 3339 time (omitted when none),
//	     "closed_at": int (entry), "clean": bool, "bytes": int}
//	WALSegment {"file": string, "first": int (entry index), "entries": int, "bytes": int}
//	Window {"start", "end": RFC 3339 time, "session": int (omitted for aligned windows)}
//	Pipeline {"name": string, "buffers": [Buffer], "source_states": [SourceState], "reduces": [Reduce]}
//	Buffer {"vertex": string, "topic": Topic}
//	SourceState {"vertex", "file": string, "version", "state_bytes": int,
//	             "anchors": {buffer: [offset per partition]} (omitted when none)}
//	Reduce {"vertex", "dir": string, "logs": [ReduceLog]}
//	ReduceLog {"name": string (partition-{p}), "wal": WAL}
//
// The Go types of the same names in this command's source (report.go)
// are the schema's definition.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitClean      = 0
	exitDamaged    = 1
	exitUnreadable = 2
)

const usage = `usage:
  runnel inspect [-json] <dir>   show a topic, WAL or pipeline data directory
  runnel verify [-json] <dir>    check every record's checksum
exit codes: 0 clean, 1 damaged, 2 unreadable
`

// run is the command: args without the program name; it returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "verify") {
		if len(args) > 0 && args[0] != "help" && args[0] != "-h" && args[0] != "-help" {
			fmt.Fprintf(stderr, "runnel: unknown command %q\n", args[0])
		}
		fmt.Fprint(stderr, usage)
		return exitUnreadable
	}
	command := args[0]
	fs := flag.NewFlagSet("runnel "+command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "write the report as JSON (the schema is in the command's doc)")
	fs.Usage = func() { fmt.Fprintf(stderr, "usage: runnel %s [-json] <dir>\n", command); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		return exitUnreadable
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUnreadable
	}
	r := scan(command, fs.Arg(0))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "runnel: %v\n", err)
			return exitUnreadable
		}
	} else if r.Status == "unreadable" {
		fmt.Fprintf(stderr, "runnel %s: %s\n", command, r.Error)
	} else {
		writeText(stdout, r)
	}
	switch r.Status {
	case "clean":
		return exitClean
	case "damaged":
		return exitDamaged
	}
	return exitUnreadable
}
