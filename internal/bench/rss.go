package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Memory is a reading of the process's resident set size, in bytes.
type Memory struct {
	RSS uint64 // VmRSS: resident now
	HWM uint64 // VmHWM: the highest RSS since the process started
}

// ErrNoMemoryStats is returned by [ReadMemory] where /proc/self/status does
// not exist (anything but Linux).
var ErrNoMemoryStats = errors.New("bench: process memory statistics not available")

// ReadMemory reads the current process's VmRSS and VmHWM from
// /proc/self/status.
func ReadMemory() (Memory, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Memory{}, ErrNoMemoryStats
		}
		return Memory{}, fmt.Errorf("bench: read memory: %w", err)
	}
	return parseStatus(b)
}

// parseStatus reads the VmRSS and VmHWM lines ("VmRSS:	  12345 kB").
func parseStatus(b []byte) (Memory, error) {
	var m Memory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte{':'})
		if !ok {
			continue
		}
		var dst *uint64
		switch string(name) {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return Memory{}, fmt.Errorf("bench: read memory: malformed %s line", name)
		}
		kb, err := strconv.ParseUint(string(fields[0]), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("bench: read memory: %s: %w", name, err)
		}
		*dst = kb << 10
		found++
	}
	if found != 2 {
		return Memory{}, ErrNoMemoryStats
	}
	return m, nil
}
