package runs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// initTime is when this package was initialised: the process start where /proc cannot tell.
var initTime = time.Now()

// ProcStartFrom and InitStartFrom say where the process start (Timeline.Origin) comes from.
const (
	ProcStartFrom = "/proc/self/stat"
	InitStartFrom = "package init"
)

// clockTicks is the unit of /proc/self/stat's start time: USER_HZ, 100 on every Linux
// architecture Go supports (the kernel fixes it for user space, whatever its internal HZ).
const clockTicks = 100

var processStart = sync.OnceValues(func() (time.Time, string) {
	stat, err1 := os.ReadFile("/proc/self/stat")
	uptime, err2 := os.ReadFile("/proc/uptime")
	now := time.Now()
	if err1 != nil || err2 != nil {
		return initTime, InitStartFrom
	}
	start, err := procStart(string(stat), string(uptime), now)
	// Both clocks tick in hundredths of a second: the start may come out up to two ticks late,
	// after this package's init, a few milliseconds into the process.
	if err != nil || start.After(initTime.Add(2*time.Second/clockTicks)) || initTime.Sub(start) > time.Hour*24*365 {
		return initTime, InitStartFrom
	}
	if start.After(initTime) {
		start = initTime
	}
	return start, ProcStartFrom
})

// ProcessStart returns when this process started, and from where that is known: on Linux,
// /proc/self/stat's start time (in clock ticks since boot) set against /proc/uptime read now,
// to about 10 ms; elsewhere, or if those files cannot be read, the time this package was
// initialised ("package init"), which comes after the Go runtime's start.
func ProcessStart() (time.Time, string) { return processStart() }

// procStart computes the start time from the contents of /proc/self/stat and /proc/uptime,
// read at now.
func procStart(stat, uptime string, now time.Time) (time.Time, error) {
	// The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return time.Time{}, fmt.Errorf("runs: /proc/self/stat: no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:])
	const startField = 22 - 3 // field 22 (starttime), counted after pid and comm
	if len(fields) <= startField {
		return time.Time{}, fmt.Errorf("runs: /proc/self/stat: %d fields, want more than %d", len(fields)+2, startField+2)
	}
	ticks, err := strconv.ParseInt(fields[startField], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("runs: /proc/self/stat: start time: %w", err)
	}
	up := strings.Fields(uptime)
	if len(up) == 0 {
		return time.Time{}, fmt.Errorf("runs: /proc/uptime is empty")
	}
	secs, err := strconv.ParseFloat(up[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("runs: /proc/uptime: %w", err)
	}
	since := time.Duration(secs*float64(time.Second)) - time.Duration(ticks)*time.Second/clockTicks
	return now.Add(-since), nil
}
