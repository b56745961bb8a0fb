package file

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/vertex"
)

// The ID of a line is "{path}:{start}-{end}": the path as the glob matched
// it, the byte offset where the line starts and the one after its newline.
// It is unique (two lines of a file never share a start) and stable (the
// line read again after a restart has the same bytes there), and it
// carries the end so that an acknowledgement, even of a message an earlier
// run wrote (the pipeline acknowledges what it finds in its buffers after
// a crash, see vertex.Resumable), says exactly which bytes are done
// without the source reading them again.

// lineID formats the ID of the line [start, end) of path.
func lineID(path string, start, end int64) string {
	b := make([]byte, 0, len(path)+24)
	b = append(b, path...)
	b = append(b, ':')
	b = strconv.AppendInt(b, start, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, end, 10)
	return string(b)
}

// ParseID returns the file and the byte range [start, end) of the line
// the source's message ID names; end is past the line's newline, when it
// has one.
func ParseID(id string) (path string, start, end int64, err error) {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return "", 0, 0, fmt.Errorf("%w: ID %q is not {path}:{start}-{end}", vertex.ErrUnknownAck, id)
	}
	a, b, ok := strings.Cut(id[i+1:], "-")
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || start < 0 || end <= start {
		return "", 0, 0, fmt.Errorf("%w: ID %q is not {path}:{start}-{end}", vertex.ErrUnknownAck, id)
	}
	return id[:i], start, end, nil
}
