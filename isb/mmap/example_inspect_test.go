package mmap_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/mmap"
)

// Inspect shows a topic directory without opening it: its partitions'
// offsets and segments, the groups' commits and lag.
func ExampleInspect() {
	dir, _ := os.MkdirTemp("", "mmap-inspect-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	topic, err := mmap.NewTopic[string](dir, "orders", mmap.Topic(isb.Partitions(1)), mmap.SegmentSize(mmap.MinSegmentSize))
	if err != nil {
		panic(err)
	}
	if err := topic.Producer(nil).ProduceBatch(ctx, []string{"a", "b", "c"}); err != nil {
		panic(err)
	}
	c, err := topic.PullConsumer("billing", isb.ManualCommit())
	if err != nil {
		panic(err)
	}
	b, err := c.Pull(ctx)
	if err != nil {
		panic(err)
	}
	if err := c.CommitTo(b.Partition, 2); err != nil {
		panic(err)
	}
	c.Close()
	topic.Close()

	info, err := mmap.Inspect(filepath.Join(dir, "orders"))
	if err != nil {
		panic(err)
	}
	fmt.Println(info.PartitionCount, info.Codec, info.ElementType, len(info.Damage))
	for _, p := range info.Partitions {
		fmt.Printf("partition %d: [%d, %d), %d segment(s)\n", p.ID, p.Head, p.Tail, len(p.Segments))
		for _, g := range p.Groups {
			fmt.Printf("group %s: commit %d, lag %d\n", g.Name, g.Commit, g.Lag)
		}
	}
	// Output:
	// 1 json string 0
	// partition 0: [0, 3), 1 segment(s)
	// group billing: commit 2, lag 1
}
