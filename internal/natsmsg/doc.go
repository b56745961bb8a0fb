// Package natsmsg is what the NATS core connector (vertex/nats) and the
// JetStream connector (vertex/jetstream) share: how a NATS message's
// headers, subject and data map onto a runnel message and back (one
// mapping, so that a message read by either source and written by either
// sink keeps its keys, event time and headers), the queue between a
// subscription's callback and a source's Read, and the rate-limited
// failure log.
//
// It is internal: users see the mapping through the header constants and
// package docs of the two connectors.
package natsmsg
