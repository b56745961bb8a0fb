package isb_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

func newTopic[T any](t *testing.T, name string, opts ...isb.TopicOption) *isb.Topic[T] {
	t.Helper()
	tp, err := isb.NewTopic[T](name, isbtest.NewSliceBackend[T](), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}

func TestRegistry(t *testing.T) {
	var r isb.Registry // the zero value is ready
	words := newTopic[string](t, "words")
	if err := isb.Register(&r, words); err != nil {
		t.Fatal(err)
	}
	if err := isb.Register(&r, newTopic[string](t, "words")); !errors.Is(err, isb.ErrTopicExists) || !strings.Contains(err.Error(), `"words"`) {
		t.Fatalf("second Register = %v, want ErrTopicExists naming the topic", err)
	}
	if err := isb.Register(&r, newTopic[int](t, "numbers")); err != nil {
		t.Fatal(err)
	}

	got, err := isb.Lookup[string](&r, "words")
	if err != nil || got != words {
		t.Fatalf("Lookup = %p, %v; want %p", got, err, words)
	}
	if _, err := isb.Lookup[string](&r, "nope"); !errors.Is(err, isb.ErrUnknownTopic) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Lookup of an unknown name = %v, want ErrUnknownTopic naming it", err)
	}
	_, err = isb.Lookup[int](&r, "words")
	var te *isb.TypeError
	if !errors.As(err, &te) || !errors.Is(err, isb.ErrWrongType) {
		t.Fatalf("Lookup with the wrong type = %v, want a *TypeError", err)
	}
	if te.Topic != "words" || te.Want != reflect.TypeFor[int]() || te.Got != reflect.TypeFor[string]() {
		t.Fatalf("TypeError = %+v, want topic words, want int, got string", te)
	}
	if msg := err.Error(); !strings.Contains(msg, "string") || !strings.Contains(msg, "int") {
		t.Fatalf("TypeError message %q does not name both types", msg)
	}

	pr, err := isb.ProducerOf[string](&r, "words")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := pr.Produce(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if n := words.Pending("any"); n != 1 {
		t.Fatalf("Pending = %d after producing through the registry, want 1", n)
	}
	if _, err := isb.ProducerOf[int](&r, "words"); !errors.Is(err, isb.ErrWrongType) {
		t.Fatalf("ProducerOf with the wrong type = %v", err)
	}
	if _, err := isb.ProducerOf[int](&r, "nope"); !errors.Is(err, isb.ErrUnknownTopic) {
		t.Fatalf("ProducerOf of an unknown name = %v", err)
	}
}

// TestRegisterNil: a nil topic is an error naming it, not a panic.
func TestRegisterNil(t *testing.T) {
	var r isb.Registry
	err := isb.Register[string](&r, nil)
	var oe *isb.OptionError
	if !errors.As(err, &oe) || oe.Option != "topic" {
		t.Fatalf("Register(nil) = %v, want an *OptionError naming the topic", err)
	}
	if _, err := isb.Lookup[string](&r, ""); !errors.Is(err, isb.ErrUnknownTopic) {
		t.Fatalf("Lookup after Register(nil) = %v, want ErrUnknownTopic (nothing registered)", err)
	}
}
