// Package jetstream is the storage of the ISB on NATS JetStream.
package jetstream
