package isbtest

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
)

func (s suite) topicOptions(t *testing.T) {
	for _, c := range []struct {
		name   string
		topic  string
		opts   []isb.TopicOption
		option string
	}{
		{"zero partitions", "t", []isb.TopicOption{isb.Partitions(0)}, "Partitions"},
		{"negative partitions", "t", []isb.TopicOption{isb.Partitions(-3)}, "Partitions"},
		{"too many partitions", "t", []isb.TopicOption{isb.Partitions(1<<16 + 1)}, "Partitions"},
		{"negative capacity", "t", []isb.TopicOption{isb.Capacity(-1)}, "Capacity"},
		{"capacity past the limit", "t", []isb.TopicOption{isb.Capacity(1 << 46)}, "Capacity"},
		{"unknown full mode", "t", []isb.TopicOption{isb.WithFullMode(isb.FullMode(7))}, "FullMode"},
		{"empty name", "", nil, "topic name"},
		{"dot name", ".", nil, "topic name"},
		{"dot dot name", "..", nil, "topic name"},
		{"slash in name", "a/b", nil, "topic name"},
		{"NUL in name", "a\x00b", nil, "topic name"},
	} {
		tp, err := s.f(t, c.topic, c.opts...)
		if err == nil {
			tp.Close()
			t.Fatalf("%s: topic created, want an error", c.name)
		}
		optionName(t, c.name, err, c.option)
	}
	// Valid edge values are accepted.
	tp, err := s.f(t, "edge-values", isb.Partitions(1), isb.Capacity(0), isb.WithFullMode(isb.FullFail))
	if err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	if tp.Name() != "edge-values" || tp.Partitions() != 1 || tp.Capacity() != 0 {
		t.Fatalf("topic %q with %d partitions, capacity %d", tp.Name(), tp.Partitions(), tp.Capacity())
	}
}

func (s suite) consumerOptions(t *testing.T) {
	tp := s.topic(t, isb.Partitions(3))
	handler := func(context.Context, isb.Batch[Item]) error { return nil }
	for _, c := range []struct {
		name   string
		open   func() error
		option string
	}{
		{"batch size 0", func() error { _, err := tp.PullConsumer("g", isb.BatchSize(0)); return err }, "BatchSize"},
		{"no consumers", func() error { _, err := tp.PullConsumers("g", 0); return err }, "Consumers"},
		{"more consumers than partitions", func() error { _, err := tp.PullConsumers("g", 4); return err }, "Consumers"},
		{"empty group", func() error { _, err := tp.PullConsumer(""); return err }, "group name"},
		{"push consumers > partitions", func() error { _, err := tp.Subscribe("g", handler, isb.Consumers(4)); return err }, "Consumers"},
		{"push consumers 0", func() error { _, err := tp.Subscribe("g", handler, isb.Consumers(0)); return err }, "Consumers"},
		{"zero backoff", func() error { _, err := tp.Subscribe("g", handler, isb.Backoff(0, time.Second)); return err }, "Backoff"},
		{"backoff min > max", func() error {
			_, err := tp.Subscribe("g", handler, isb.Backoff(2*time.Second, time.Second))
			return err
		}, "Backoff"},
		{"nil handler", func() error { _, err := tp.Subscribe("g", nil); return err }, "handler"},
	} {
		optionName(t, c.name, c.open(), c.option)
	}
	// Group names are free-form: storage escapes what is not a path component.
	for _, g := range []string{"a/b", "..", ".", "tab\tand space", "ünï"} {
		c, err := tp.PullConsumer(g)
		if err != nil {
			t.Fatalf("PullConsumer(%q): %v", g, err)
		}
		c.Close()
	}
	// A rejected open leaves the group free.
	c, err := tp.PullConsumers("g", 3)
	if err != nil {
		t.Fatalf("valid PullConsumers after rejected ones: %v", err)
	}
	for _, c := range c {
		c.Close()
	}
}
