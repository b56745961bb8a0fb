package jskv

import (
	"github.com/runnel-dev/runnel/isb"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// An Option configures a Store. Options are checked once, by New.
type Option interface {
	apply(*config) error
}

// optionFunc is an Option that is a function.
type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// config is the checked form of the options: the settings of every KV
// bucket the store creates.
type config struct {
	history  uint8
	ttl      time.Duration
	replicas int
	storage  jetstream.StorageType
}

func defaultConfig() config {
	return config{history: 1, replicas: 1, storage: jetstream.FileStorage}
}

// kvConfig is the configuration of a new bucket.
func (c *config) kvConfig(bucket string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "runnel watermarks",
		History:     c.history,
		TTL:         c.ttl,
		Replicas:    c.replicas,
		Storage:     c.storage,
	}
}

// WithHistory keeps n values per key (1 to 64; default 1). A watch starts
// from the latest value of each key either way; older values are only for
// inspection (nats kv history).
func WithHistory(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 || n > 64 {
			return &isb.OptionError{Package: "jskv", Option: "WithHistory", Value: n, Reason: "a bucket keeps 1 to 64 values per key"}
		}
		c.history = uint8(n)
		return nil
	})
}

// WithTTL removes keys not written for d (0, the default, keeps them; else
// at least 100ms, JetStream's smallest maximum age). Watchers are not told
// of a removal by TTL; a fetcher drops a processor whose heartbeat stops on
// its own timeout, so a TTL longer than that timeout only bounds the space
// dead processors take.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d != 0 && d < 100*time.Millisecond {
			return &isb.OptionError{Package: "jskv", Option: "WithTTL", Value: d, Reason: "must be 0 (keep keys) or at least 100ms"}
		}
		c.ttl = d
		return nil
	})
}

// WithReplicas stores each bucket on n servers of a cluster (1 to 5;
// default 1).
func WithReplicas(n int) Option {
	return optionFunc(func(c *config) error {
		if n < 1 || n > 5 {
			return &isb.OptionError{Package: "jskv", Option: "WithReplicas", Value: n, Reason: "must be 1 to 5 replicas"}
		}
		c.replicas = n
		return nil
	})
}

// WithStorage stores buckets in files (jetstream.FileStorage, the default:
// watermarks survive a server restart) or in memory
// (jetstream.MemoryStorage: faster, lost when the server restarts, after
// which every watch of the bucket fails).
func WithStorage(st jetstream.StorageType) Option {
	return optionFunc(func(c *config) error {
		if st != jetstream.FileStorage && st != jetstream.MemoryStorage {
			return &isb.OptionError{Package: "jskv", Option: "WithStorage", Value: int(st), Reason: "must be FileStorage or MemoryStorage"}
		}
		c.storage = st
		return nil
	})
}
