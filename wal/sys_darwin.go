package wal

// mapPopulate is 0: macOS has no MAP_POPULATE; pages are read on first
// touch.
const mapPopulate = 0
