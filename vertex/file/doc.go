// Package file connects pipelines to line-delimited files: a source that
// reads the lines of the files a glob matches ([NewSource]) and a sink that
// writes rotated files of lines ([NewSink]). Values are []byte, one line
// each, without the newline; a pipeline maps them to and from its own
// types.
//
// # Source: delivery and replay
//
// The source is at-least-once, and replayable on durable storage
// (pipeline.MMap, or JetStream): it is a vertex.Resumable that saves, as
// the pipeline acknowledges lines (written to every buffer they go to),
// the byte ranges acknowledged in each file, and a restarted pipeline
// reads every line those ranges do not cover and none that they do. A
// line's ID is "{path}:{start}-{end}", its byte range, the same in every
// run; so the source keeps the promises vertex.Resumable lists, and hands
// no line over twice to a buffer only it writes to, across crashes too
// (SIGKILL included): what it wrote after its last save the pipeline finds
// in its buffers and acknowledges before the source reads on. Downstream
// of it delivery is what the pipeline gives (at least once into a sink;
// see package pipeline, "Delivery guarantees"). On memory storage nothing
// survives the process, and the source starts from the beginning of every
// file in each run.
//
// # Source: what it reads, and when it ends
//
//   - Files are read one after another in path order, each from where the
//     position says to its end; directories and other non-regular files
//     the glob matches are skipped.
//   - Once it has read every file, the source matches the glob again:
//     files that appeared are read, and files that grew are read on from
//     where they stopped. Without [Follow] it ends (io.EOF) when that
//     finds nothing more to read: the files are taken as complete, and a
//     last line without a newline is a line. With Follow it never ends: it
//     looks again every poll, and holds back a last line until its
//     newline comes (a writer may be in the middle of it).
//   - A line longer than [MaxLineBytes] fails the source with
//     [ErrLineTooLong], naming the file and the line's offset.
//   - A glob that matches nothing is no error (nothing to read yet); a
//     directory of the glob that does not exist or cannot be opened is,
//     from Validate: a misspelt path would otherwise read nothing, quietly.
//   - A file that cannot be opened or read fails the source with an
//     [*Error] naming it (errors.Is(err, fs.ErrPermission) tells why).
//   - Replicas of the source vertex share one reader: a second replica
//     does not read faster.
//   - A failure of the source (a changed file, a line too long, a file it
//     cannot read) fails the pipeline: it is no vertex.RetryDefaulter, as
//     retrying reads the same bytes again. A vertex.Retry policy on the
//     source vertex retries it anyway (a file being fixed by hand).
//
// # Source: files that change
//
// The source reads files that are written once or appended to, under
// names that stay: the sink's rotated files, logs named by date. A file
// found shorter than the position the source read or saved in it
// ([ErrTruncated]), or a path that now names another file (another inode:
// [ErrReplaced]), fails the source with an [*Error] naming the file and the
// offset; the source does not start the file again. Why: the lines of the
// new content would get the IDs of the old lines at the same offsets, so
// the pipeline's read-back after a crash, and any deduplicating sink, would
// take new lines for old ones and drop them; and a log rotated by rename
// (app.log to app.log.1) would be read again under its new name. An
// operator who means the new content to be read removes the file's entry
// by deleting it and creating it again while the pipeline is stopped (a
// path that no longer exists at a restart is forgotten, and a file that
// appears there later is read from its start), or deletes the source's
// state ({dir}/{pipeline}/{vertex}.source on mmap storage) to read
// everything again.
//
// The position keeps an entry per file ever read, removed at a restart
// for the files deleted since: a directory that only grows keeps a
// position that grows with it.
//
// # Sink
//
// The sink writes each message's Value and a newline to
// {prefix}{ten digits}{suffix} in its directory (part-0000000001.txt by
// default, [Names]), one file after another: the file being written is
// named with ".open" after it, renamed to its final name when it rotates
// ([RotateBytes], default 64 MiB; [RotateLines]) or when the pipeline stops.
// A consumer that globs the final names (part-*.txt) therefore sees only
// complete files, each once (a file source globbing ".open" names too
// would read a renamed file again: another path). Write returns, and the
// pipeline acknowledges the batch, only once its lines are on the disk:
// the file fsync'd (fdatasync on Linux), and the directory when a file was
// created or renamed, so a crash of the process or the machine loses no
// line the pipeline was told is written.
//
// Delivery is at least once: a batch that failed, or that a crash stopped
// between the sink's write and the pipeline's commit, is written again.
// The sink writes values only; a consumer that deduplicates needs an ID in
// the value. At its start the sink locks its directory (a second sink on
// it fails with [ErrLocked]), numbers on after the highest file there, and
// completes the files a crashed run left ".open": what follows the last
// newline is a line the crash cut, never acknowledged, and is cut off; the
// rest gets its final name.
//
// A Value containing a newline cannot be one line: the sink answers
// vertex.ResultFallback for it, so it goes to the vertex's fallback sink,
// and without one the pipeline fails. The Writes of a vertex's replicas and
// workers append one after another (one sequence of files) and share their
// flushes: one fdatasync covers every Write that appended while the
// previous one ran, so more workers do not mean more flushes.
package file
