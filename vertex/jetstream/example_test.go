package jetstream_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/pipeline"
	vjetstream "github.com/runnel-dev/runnel/vertex/jetstream"
)

// Stream ORDERS -> upper-case -> stream UPPER, on a NATS server with
// JetStream in the process: the source reads what ORDERS holds through
// the durable consumer "upper" and ends (StopAtEnd), the sink publishes
// each message with its ID as Nats-Msg-Id.
func Example() {
	dir, err := os.MkdirTemp("", "runnel-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		panic("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, name := range []string{"ORDERS", "UPPER"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name)}}); err != nil {
			panic(err)
		}
	}
	for _, w := range []string{"alpha", "beta", "gamma"} {
		if _, err := js.Publish(ctx, "orders", []byte(w)); err != nil {
			panic(err)
		}
	}

	src, err := vjetstream.NewSource(ctx, vjetstream.SourceConfig{
		Conn: nc, Stream: "ORDERS", Durable: "upper", StopAtEnd: true,
	})
	if err != nil {
		panic(err)
	}
	sink, err := vjetstream.NewSink(vjetstream.SinkConfig{Conn: nc, Subject: "upper"})
	if err != nil {
		panic(err)
	}
	p := pipeline.New("upper")
	orders := pipeline.Source(p, "orders", src)
	upper := pipeline.Map(p, "upper", orders, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	})
	pipeline.Sink(p, "out", upper, sink)
	if err := p.Run(ctx); err != nil { // closes the source and the sink
		panic(err)
	}

	// The map's concurrent calls may reorder the messages: print them
	// sorted, each with the ID the source gave it (stream/sequence).
	cons, err := js.OrderedConsumer(ctx, "UPPER", jetstream.OrderedConsumerConfig{})
	if err != nil {
		panic(err)
	}
	batch, err := cons.Fetch(3)
	if err != nil {
		panic(err)
	}
	var lines []string
	for m := range batch.Messages() {
		lines = append(lines, fmt.Sprintf("%s %s", m.Data(), m.Headers().Get(vjetstream.MsgIDHeader)))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// ALPHA ORDERS/1
	// BETA ORDERS/2
	// GAMMA ORDERS/3
}
