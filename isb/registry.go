package isb

import (
	"fmt"
	"reflect"
	"sync"
)

// Registry finds topics by name at run time. The zero Registry is ready to
// use and safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	topics map[string]registered
}

// registered is a topic with its element type, kept for TypeError.
type registered struct {
	topic any // *Topic[T]
	elem  reflect.Type
}

// Register adds t under its name; a name registered twice is ErrTopicExists,
// a nil t an *OptionError.
func Register[T any](r *Registry, t *Topic[T]) error {
	if t == nil {
		return &OptionError{Option: "topic", Value: "nil", Reason: "must not be nil"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.topics[t.Name()]; ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, t.Name())
	}
	if r.topics == nil {
		r.topics = make(map[string]registered)
	}
	r.topics[t.Name()] = registered{topic: t, elem: reflect.TypeFor[T]()}
	return nil
}

// Lookup returns the topic registered under name: ErrUnknownTopic if there
// is none, a *TypeError (ErrWrongType) if its element type is not T.
func Lookup[T any](r *Registry, name string) (*Topic[T], error) {
	r.mu.RLock()
	e, ok := r.topics[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, name)
	}
	t, ok := e.topic.(*Topic[T])
	if !ok {
		return nil, &TypeError{Topic: name, Want: reflect.TypeFor[T](), Got: e.elem}
	}
	return t, nil
}

// ProducerOf returns a round-robin producer of the topic registered under
// name, with the errors of Lookup.
func ProducerOf[T any](r *Registry, name string) (*Producer[T], error) {
	t, err := Lookup[T](r, name)
	if err != nil {
		return nil, err
	}
	return t.Producer(nil), nil
}
