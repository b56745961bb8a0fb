package file_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// Log files in, upper-cased lines out, in files of two lines each. On
// durable storage (pipeline.WithStorage(pipeline.MMap(dir))) a second run
// would read only lines added since.
func Example() {
	dir, _ := os.MkdirTemp("", "file-example")
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.Mkdir(in, 0o755)
	os.WriteFile(filepath.Join(in, "a.log"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(in, "b.log"), []byte("three\n"), 0o644)

	p := pipeline.New("example")
	lines := pipeline.Source(p, "lines", file.NewSource(filepath.Join(in, "*.log")))
	upper := pipeline.Map(p, "upper", lines, func(_ context.Context, v []byte) ([]byte, error) {
		return bytes.ToUpper(v), nil
	}, vertex.Concurrency(1)) // one at a time: the lines stay in order
	pipeline.Sink(p, "out", upper, file.NewSink(out, file.RotateLines(2)), vertex.Concurrency(1))
	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	names, _ := filepath.Glob(filepath.Join(out, "part-*.txt"))
	for _, name := range names {
		b, _ := os.ReadFile(name)
		fmt.Printf("%s %q\n", filepath.Base(name), b)
	}
	// Output:
	// part-0000000001.txt "ONE\nTWO\n"
	// part-0000000002.txt "THREE\n"
}

// A line's ID is its file and byte range.
func ExampleParseID() {
	path, start, end, err := file.ParseID("logs/app.log:1024-1090")
	fmt.Println(path, start, end, err)
	// Output:
	// logs/app.log 1024 1090 <nil>
}
