package watermark

import (
	"encoding/binary"
	"fmt"
	"time"
)

// A heartbeat value is a version byte and the publisher's clock in Unix
// milliseconds (big-endian int64). Fetchers judge liveness by their own clock
// when the heartbeat arrives; the time inside is for people reading the store.
const (
	heartbeatVersion = 1
	heartbeatSize    = 9
)

func encodeHeartbeat(now time.Time) []byte {
	b := make([]byte, 0, heartbeatSize)
	b = append(b, heartbeatVersion)
	return binary.BigEndian.AppendUint64(b, uint64(now.UnixMilli()))
}

// decodeHeartbeat returns the publisher time inside a heartbeat value.
func decodeHeartbeat(b []byte) (time.Time, error) {
	if len(b) != heartbeatSize || b[0] != heartbeatVersion {
		return time.Time{}, fmt.Errorf("%w: heartbeat: %d bytes, version %d (want %d bytes, version %d)",
			ErrDecode, len(b), firstByte(b), heartbeatSize, heartbeatVersion)
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[1:]))).UTC(), nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
