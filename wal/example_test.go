package wal_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runnel-dev/runnel/wal"
)

// A reduce appends what it reads before acknowledging it, closes windows
// with GC events, and after a restart replays the open windows and skips
// redelivered offsets the log already holds.
func Example() {
	dir, _ := os.MkdirTemp("", "wal-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	minute := func(i int) wal.Window {
		return wal.Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)}
	}

	w, err := wal.Open(dir)
	if err != nil {
		panic(err)
	}
	// Three messages of partition 0: two in the first minute, one in the second.
	err = w.Append(ctx,
		wal.Entry{Partition: 0, Offset: 10, EventTime: t0.Add(5 * time.Second), Keys: []string{"a"}, Windows: []wal.Window{minute(0)}, Value: []byte(`1`)},
		wal.Entry{Partition: 0, Offset: 11, EventTime: t0.Add(30 * time.Second), Keys: []string{"b"}, Windows: []wal.Window{minute(0)}, Value: []byte(`2`)},
		wal.Entry{Partition: 0, Offset: 12, EventTime: t0.Add(65 * time.Second), Keys: []string{"a"}, Windows: []wal.Window{minute(1)}, Value: []byte(`3`)},
	)
	if err != nil {
		panic(err)
	}
	// The watermark passed the first minute: emit it, then close it.
	if err := w.GC(ctx, minute(0).End, minute(0)); err != nil {
		panic(err)
	}
	w.Close() // or a crash

	w, err = wal.Open(dir)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	for e, err := range w.Replay() {
		if err != nil {
			panic(err)
		}
		fmt.Printf("replay partition %d offset %d keys %v value %s window %s\n", e.Partition, e.Offset, e.Keys, e.Value, e.Windows[0].Start.UTC().Format("15:04"))
	}
	rec := w.Recovered()
	fmt.Println("skip redelivered offsets of partition 0 up to", rec.LastOffsets[0])
	fmt.Println("windows closed up to", rec.Watermark.UTC().Format("15:04"))
	// Output:
	// replay partition 0 offset 12 keys [a] value 3 window 00:01
	// skip redelivered offsets of partition 0 up to 12
	// windows closed up to 00:01
}

// A reader that does not wait for each batch's fsync: it hands every batch
// to the group commit, goes on reading, and acknowledges a batch once its
// Pending is done. Batches appended while an fsync runs share the next one.
func ExampleWAL_AppendAsync() {
	dir, _ := os.MkdirTemp("", "wal-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	window := wal.Window{Start: t0, End: t0.Add(time.Minute)}

	w, err := wal.Open(dir)
	if err != nil {
		panic(err)
	}
	defer w.Close()
	var pending []*wal.Pending
	for batch := range 3 {
		var entries []wal.Entry
		for i := range 2 {
			off := int64(batch*2 + i)
			entries = append(entries, wal.Entry{Partition: 0, Offset: off, ID: fmt.Sprint("m", off),
				EventTime: t0.Add(time.Duration(off) * time.Second), Windows: []wal.Window{window}, Value: []byte(`1`)})
		}
		p, err := w.AppendAsync(ctx, entries...)
		if err != nil {
			panic(err)
		}
		pending = append(pending, p) // read the next batch meanwhile
	}
	for batch, p := range pending {
		if err := p.Wait(ctx); err != nil {
			panic(err)
		}
		fmt.Printf("batch %d durable: ack it\n", batch)
	}
	// Output:
	// batch 0 durable: ack it
	// batch 1 durable: ack it
	// batch 2 durable: ack it
}

// Inspect shows a log without opening it: its entries, the open windows
// and what a restart would replay.
func ExampleInspect() {
	dir, _ := os.MkdirTemp("", "wal-inspect-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	minute := func(i int) wal.Window {
		return wal.Window{Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i+1) * time.Minute)}
	}
	w, err := wal.Open(dir)
	if err != nil {
		panic(err)
	}
	for i := range 3 {
		e := wal.Entry{Partition: 0, Offset: int64(i), EventTime: minute(i % 2).Start, Windows: []wal.Window{minute(i % 2)}}
		if err := w.Append(ctx, e); err != nil {
			panic(err)
		}
	}
	if err := w.GC(ctx, minute(0).End, minute(0)); err != nil { // the first minute is emitted
		panic(err)
	}
	w.Close()

	info, err := wal.Inspect(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Messages, "messages,", info.OpenMessages, "open, clean:", info.Clean)
	for _, win := range info.OpenWindows {
		fmt.Println("open window", win.Start.UTC().Format(time.TimeOnly), win.End.UTC().Format(time.TimeOnly))
	}
	// Output:
	// 3 messages, 1 open, clean: true
	// open window 00:01:00 00:02:00
}
