// Package fsutil holds the file-system steps that runnel's durable stores
// (isb/mmap, wal, the pipeline's source state) share, each with the
// guarantee it gives once it returns nil:
//
//   - WriteFileAtomic(path, data): path holds data, durably. After a crash
//     at any point, path holds either its old content or data, never a
//     mix; on an error it holds its old content.
//   - SyncDir(dir): the entries of dir created, renamed or removed before
//     the call are durable (fsyncs of the files themselves do not make
//     their names durable).
//   - MkdirAllSynced(dir): dir exists and so, durably, does every
//     directory it created on the way.
//   - LockDir(pkg, dir, held, unsupported): the caller holds an exclusive lock on dir until it
//     closes the returned file or its process ends, however it ends; no
//     other open file description holds it, in this process or another.
//   - Fdatasync(f): the bytes written to f before the call, and the
//     metadata needed to read them back (its size), are on the disk, not
//     in a cache of the operating system or of the drive.
//
// LockDir and Fdatasync run on Linux and macOS; on every other system
// LockDir returns the store's unsupported error and Fdatasync
// errors.ErrUnsupported. A store that locks its directory first, as every
// caller here does, therefore refuses at open and never reaches
// Fdatasync. The rest is plain os.
//
// Errors name the operation and the path but carry no package prefix: the
// caller adds its own ("mmap: ", "wal: "). LockDir is the exception: its
// errors are the store's own sentinels, returned as they are.
//
// Corruption is the part that every corruption error of those stores
// shares: the damaged file, the byte position and the reason.
//
// It is internal: no user imports it.
package fsutil
