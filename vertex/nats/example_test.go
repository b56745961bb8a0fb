package nats_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	vnats "github.com/runnel-dev/runnel/vertex/nats"
)

// Subject "words" -> upper-case -> subject "upper.<key>", on a NATS
// server in the process: the source's keys come from the subject's
// second token, and the sink publishes each message to a subject of its
// key.
func Example() {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()

	src, err := vnats.NewSource(vnats.SourceConfig{Conn: nc, Subject: "words.*", KeyTokens: []int{1}})
	if err != nil {
		panic(err)
	}
	sink, err := vnats.NewSink(vnats.SinkConfig{Conn: nc, SubjectOf: func(m *vertex.Message[[]byte]) string {
		return "upper." + m.Keys[0]
	}})
	if err != nil {
		panic(err)
	}
	out, err := nc.SubscribeSync("upper.*")
	if err != nil {
		panic(err)
	}
	p := pipeline.New("upper")
	words := pipeline.Source(p, "words", src)
	upper := pipeline.Map(p, "upper", words, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	})
	pipeline.Sink(p, "out", upper, sink)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }() // closes the source and the sink

	for _, w := range []string{"alpha", "beta", "gamma"} {
		nc.Publish("words."+w[:1], []byte(w))
	}
	// Core NATS is at most once and has no end: read what arrives, then
	// stop the pipeline.
	var lines []string
	for len(lines) < 3 {
		m, err := out.NextMsg(10 * time.Second)
		if err != nil {
			panic(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s", m.Subject, m.Data))
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// upper.a ALPHA
	// upper.b BETA
	// upper.g GAMMA
}
