package jskv_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/watermark"
	"github.com/runnel-dev/runnel/watermark/jskv"
)

// A processor's heartbeat in the bucket of the edge map -> sink, on a NATS
// server embedded in the process (a deployment connects to its cluster
// instead), and a watch that sees it and then its deletion.
func Example() {
	dir, err := os.MkdirTemp("", "jskv-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	srv.Start()
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		log.Fatal("server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}

	store, err := jskv.New(js, jskv.WithTTL(0)) // keys stay until deleted
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bucket, err := watermark.EdgeBucket("orders", "map", "sink")
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Put(ctx, bucket, "hb.map-0", []byte("alive")); err != nil {
		log.Fatal(err)
	}
	v, err := store.Get(ctx, bucket, "hb.map-0")
	fmt.Printf("get: %s %v\n", v, err)

	for u, err := range store.Watch(ctx, bucket) {
		if err != nil {
			log.Fatal(err)
		}
		switch u.Op {
		case watermark.OpPut:
			fmt.Printf("put %s=%s\n", u.Key, u.Value)
		case watermark.OpSynced:
			fmt.Println("synced")
			if err := store.Delete(ctx, bucket, "hb.map-0"); err != nil {
				log.Fatal(err)
			}
		case watermark.OpDelete:
			fmt.Printf("delete %s\n", u.Key)
			cancel() // ends the watch, without an error
		}
	}
	// Output:
	// get: alive <nil>
	// put hb.map-0=alive
	// synced
	// delete hb.map-0
}
