// Package isbtest is the behaviour suite every isb storage mode must pass.
// A storage package's tests call Run with a Factory that makes its topics.
package isbtest

import (
	"testing"

	"github.com/runnel-dev/runnel/isb"
)

// Item is the element type the suite produces: who produced it and its
// sequence number at that producer, so every item is accounted for.
type Item struct {
	Producer int    `json:"p"`
	Seq      int    `json:"s"`
	Key      string `json:"k,omitempty"`
}

// Factory creates a fresh, empty topic named name with opts on the storage
// under test. It registers cleanup (closing the topic, removing files) with t.
type Factory func(t testing.TB, name string, opts ...isb.TopicOption) (*isb.Topic[Item], error)

// Run runs the whole suite against f.
func Run(t *testing.T, f Factory) {
	t.Skip("isbtest: TODO(issue 2)")
}
