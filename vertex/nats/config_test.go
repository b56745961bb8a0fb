package nats

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/vertex"
)

// Every invalid field is an *OptionError naming it.
func TestConfigErrors(t *testing.T) {
	nc := &nats.Conn{} // never used: validation fails first
	sub := func(*vertex.Message[[]byte]) string { return "x" }
	for _, c := range []struct {
		option string
		err    error
	}{
		{"Conn", func() error { _, err := NewSource(SourceConfig{Subject: "a"}); return err }()},
		{"Subject", func() error { _, err := NewSource(SourceConfig{Conn: nc}); return err }()},
		{"Subject", func() error { _, err := NewSource(SourceConfig{Conn: nc, Subject: "a..b"}); return err }()},
		{"Subject", func() error { _, err := NewSource(SourceConfig{Conn: nc, Subject: "a.>.b"}); return err }()},
		{"Queue", func() error { _, err := NewSource(SourceConfig{Conn: nc, Subject: "a", Queue: "q w"}); return err }()},
		{"Pending", func() error { _, err := NewSource(SourceConfig{Conn: nc, Subject: "a", Pending: -1}); return err }()},
		{"PollInterval", func() error { _, err := NewSource(SourceConfig{Conn: nc, Subject: "a", PollInterval: -1}); return err }()},
		{"KeyTokens", func() error {
			_, err := NewSource(SourceConfig{Conn: nc, Subject: "a", KeyTokens: []int{-1}})
			return err
		}()},
		{"Conn", func() error { _, err := NewSink(SinkConfig{Subject: "a"}); return err }()},
		{"Subject", func() error { _, err := NewSink(SinkConfig{Conn: nc}); return err }()},
		{"Subject", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a.*"}); return err }()},
		{"SubjectOf", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a", SubjectOf: sub}); return err }()},
		{"FlushTimeout", func() error { _, err := NewSink(SinkConfig{Conn: nc, Subject: "a", FlushTimeout: -1}); return err }()},
	} {
		var oe *vertex.OptionError
		if !errors.As(c.err, &oe) || oe.Option != c.option || oe.Package != "nats" {
			t.Errorf("got %v, want an option error naming %s", c.err, c.option)
			continue
		}
		if !errors.Is(c.err, isb.ErrInvalidOption) || !strings.Contains(c.err.Error(), c.option) {
			t.Errorf("%v: not ErrInvalidOption, or without the option's name", c.err)
		}
	}
}
