package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/isb"
)

// Backend is the JetStream storage of one topic; it implements
// isb.Backend[T] and declares isb.Caps Concurrent, Deferred, Shared and
// OwnsLimits. Create it with New and hand it to isb.NewTopic, or use
// NewTopic to do both. Every process that opens the topic opens a Backend
// of its own on the same server.
type Backend[T any] struct {
	nc    *nats.Conn
	cfg   config[T]
	js    natsjs.JetStream
	id    string // this backend's producer id: the first part of its message ids
	topic string
	names names
	parts []*log[T]

	direct    *directReader
	pub       *publisher
	commits   natsjs.KeyValue
	claims    natsjs.KeyValue
	announced *nats.Subscription

	// ctx ends with Close: it stops the background goroutines and every
	// retry in flight.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // capacity 1: asks the refresher for a round now

	claimMu sync.Mutex
	held    map[*claim]struct{}

	used      atomic.Bool // Open ran: a Backend opens one topic once
	closeOnce sync.Once
	closeErr  error
}

var (
	_ isb.Backend[int] = (*Backend[int])(nil)
	_ isb.Log[int]     = (*log[int])(nil)
	_ isb.Completer    = (*write[int])(nil)
)

// New validates opts and returns a backend that keeps a topic in the
// JetStream server nc is connected to. Nothing is asked of the server
// until Open. nc stays the caller's: Close does not close it. Connect it
// with nats.MaxReconnects(-1) so that the backend pauses through a server
// restart instead of failing.
func New[T any](nc *nats.Conn, opts ...Option) (*Backend[T], error) {
	b, _, err := newBackend[T](nc, opts, false)
	return b, err
}

func newBackend[T any](nc *nats.Conn, opts []Option, forNewTopic bool) (*Backend[T], []isb.TopicOption, error) {
	cfg, topicOpts, err := newConfig[T](opts, forNewTopic)
	if err != nil {
		return nil, nil, err
	}
	if nc == nil {
		return nil, nil, optErr("New", nil, "needs a NATS connection")
	}
	var id [8]byte
	rand.Read(id[:])
	return &Backend[T]{nc: nc, cfg: cfg, id: hex.EncodeToString(id[:]), kick: make(chan struct{}, 1)}, topicOpts, nil
}

// NewTopic creates (or opens) the topic name in the server nc is connected
// to, from one option list: storage options and topic options carried by
// Topic.
//
//	jetstream.NewTopic[Order](nc, "orders", jetstream.Topic(isb.Partitions(4)))
func NewTopic[T any](nc *nats.Conn, name string, opts ...Option) (*isb.Topic[T], error) {
	b, topicOpts, err := newBackend[T](nc, opts, true)
	if err != nil {
		return nil, err
	}
	t, err := isb.NewTopic[T](name, b, topicOpts...)
	if err != nil {
		if cerr := b.Close(); cerr != nil {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return t, nil
}

// frameHeadroom is what a frame leaves of the server's max payload for
// the message's headers (its Nats-Msg-Id) and subject.
const frameHeadroom = 1024

// ErrOpened is returned by a second Open of a Backend.
var ErrOpened = errors.New("jetstream: backend already opened")

// Open creates each partition's stream or checks the existing one (a
// *MismatchError for other settings), binds the commit and claim buckets,
// and starts watching the topic: its announcements of appends, the
// groups' commits, and a refresh of every stream's state. Its first
// request failing to reach the server is a *StreamError matching
// ErrUnreachable.
func (b *Backend[T]) Open(topic string, partitions int) (isb.Caps, error) {
	if err := b.openTopic(topic, partitions); err != nil {
		return isb.Caps{}, err
	}
	// Publishes serialize in the server (Concurrent) and complete with
	// their acknowledgements (Deferred); other processes share the streams
	// (Shared), whose usage limit this storage enforces (OwnsLimits).
	return isb.Caps{Concurrent: true, Deferred: true, Shared: true, OwnsLimits: true}, nil
}

func (b *Backend[T]) openTopic(topic string, partitions int) error {
	if partitions < 1 {
		return optErr("Partitions", partitions, "must be at least 1")
	}
	if b.used.Swap(true) {
		return fmt.Errorf("%w: Open of topic %q", ErrOpened, topic)
	}
	b.topic = topic
	b.names = names{base: b.cfg.prefix + escape(topic), bucket: b.cfg.bucket}
	if last := b.names.stream(partitions - 1); len(last) > maxNameLen {
		return optErr("topic name", topic, fmt.Sprintf("makes stream names longer than %d bytes (%q)", maxNameLen, last))
	}
	js, err := natsjs.New(b.nc)
	if err != nil {
		return err
	}
	b.js = js
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if err := b.open(partitions); err != nil {
		b.shutdown()
		return err
	}
	return nil
}

func (b *Backend[T]) open(partitions int) error {
	// A frame and its headers must fit in one message of the server.
	if mp := int(b.nc.MaxPayload()); mp > 0 {
		b.cfg.frameBytes = max(minFrameBytes, min(b.cfg.frameBytes, mp-frameHeadroom))
	}
	var err error
	// The reader first: opening a packed stream reads its last frame.
	if b.direct, err = newDirectReader(b.nc); err != nil {
		return err
	}
	b.wg.Go(b.direct.watchReconnects)
	for p := range partitions {
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.requestTimeout)
		s, err := b.ensureStream(ctx, p, partitions)
		var l *log[T]
		if err == nil {
			l, err = newLog(ctx, b, p, s)
		}
		cancel()
		if err != nil {
			return err
		}
		b.parts = append(b.parts, l)
	}
	if err := b.openBuckets(); err != nil {
		return err
	}
	if b.pub, err = newPublisher(b.nc, b.cfg.maxOutstanding); err != nil {
		return err
	}
	b.wg.Go(b.pub.watchReconnects)
	if b.announced, err = b.nc.Subscribe(b.names.announceAll(), b.onAnnounce); err != nil {
		return fmt.Errorf("jetstream: subscribe to the announcements of topic %q: %w", b.topic, err)
	}
	if err := b.startWatch(); err != nil {
		return err
	}
	b.wg.Go(b.refreshLoop)
	b.wg.Go(b.renewLoop)
	return nil
}

// openBuckets binds the commit and claim buckets, creating them if needed.
func (b *Backend[T]) openBuckets() error {
	storage := natsjs.FileStorage
	if b.cfg.memory {
		storage = natsjs.MemoryStorage
	}
	bind := func(cfg natsjs.KeyValueConfig) (natsjs.KeyValue, error) {
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.requestTimeout)
		defer cancel()
		kv, err := b.js.KeyValue(ctx, cfg.Bucket)
		if errors.Is(err, natsjs.ErrBucketNotFound) {
			kv, err = b.js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, natsjs.ErrBucketExists) {
				kv, err = b.js.KeyValue(ctx, cfg.Bucket)
			}
		}
		if err != nil {
			return nil, streamErr("KV_"+cfg.Bucket, "open bucket", err)
		}
		return kv, nil
	}
	var err error
	if b.commits, err = bind(natsjs.KeyValueConfig{Bucket: b.names.bucket, History: 1, Storage: storage, Replicas: b.cfg.replicas,
		Description: "runnel isb: commits of consumer groups"}); err != nil {
		return err
	}
	b.claims, err = bind(natsjs.KeyValueConfig{Bucket: b.names.claims(), History: 1, Storage: storage, Replicas: b.cfg.replicas,
		TTL: b.cfg.claimTTL, Description: "runnel isb: partitions claimed by open consumers"})
	return err
}

// Partition returns the log of partition p.
func (b *Backend[T]) Partition(p int) isb.Log[T] { return b.parts[p] }

// Groups returns, sorted, the groups whose commits the server holds for
// the topic, as the watch of the commit bucket knows them (it has read
// every key once Open returns).
func (b *Backend[T]) Groups() ([]string, error) {
	var gs []string
	for _, l := range b.parts {
		l.cmu.Lock()
		for g, e := range l.commits {
			if !e.tomb && !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
		}
		l.cmu.Unlock()
	}
	slices.Sort(gs)
	return gs, nil
}

// DeleteGroup removes group's commit of every partition from the bucket.
func (b *Backend[T]) DeleteGroup(group string) error {
	var errs []error
	for _, l := range b.parts {
		if err := l.deleteGroup(group); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops the backend's goroutines, ends the claims of consumers
// still open and drops the subscriptions; it leaves the connection open.
// Topic.Close calls it once nothing uses the logs any more.
func (b *Backend[T]) Close() error {
	b.closeOnce.Do(func() {
		if b.cancel == nil { // never opened
			return
		}
		b.closeErr = b.shutdown()
	})
	return b.closeErr
}

// shutdown releases what open took, also after a failed open.
func (b *Backend[T]) shutdown() error {
	b.cancel()
	var errs []error
	// Closing the publisher and the reader ends their watchReconnects.
	if b.pub != nil {
		if err := b.pub.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.direct != nil {
		if err := b.direct.close(); err != nil {
			errs = append(errs, err)
		}
	}
	b.wg.Wait()
	b.claimMu.Lock()
	held := b.held
	b.held = nil
	b.claimMu.Unlock()
	for c := range held {
		if err := c.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if b.announced != nil {
		if err := b.announced.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
