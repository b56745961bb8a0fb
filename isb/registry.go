package isb

import "sync"

// Registry finds topics by name at run time. The zero Registry is ready to
// use and safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	topics map[string]any // name -> *Topic[T]
}

// Register adds t under its name; a name registered twice is ErrTopicExists.
func Register[T any](r *Registry, t *Topic[T]) error { panic("isb: not implemented") }

// Lookup returns the topic registered under name: ErrUnknownTopic if there
// is none, a *TypeError (ErrWrongType) if its element type is not T.
func Lookup[T any](r *Registry, name string) (*Topic[T], error) { panic("isb: not implemented") }

// ProducerOf returns a round-robin producer of the topic registered under
// name, with the errors of Lookup.
func ProducerOf[T any](r *Registry, name string) (*Producer[T], error) {
	panic("isb: not implemented")
}
