package backends

import (
	"fmt"

	"github.com/cifarlab/cifarlab/internal/plugins"
)

// DevicesUnsupportedError is returned when more than one device is asked of a backend that has
// only one, the pure-Go backend.
type DevicesUnsupportedError struct {
	// Backend describes the backend (Name).
	Backend string
	// Requested is the number of devices asked for (DevicesAll for "all").
	Requested int
}

func (e *DevicesUnsupportedError) Error() string {
	return fmt.Sprintf("backends: %s devices asked of the %s backend, which has one device and runs no distributed "+
		"programs: use the cpu backend (XLA's CPU plugin, which can expose several CPU devices: %s) or cuda for "+
		"several GPUs, or 1 device", devicesWord(e.Requested), e.Backend, plugins.XLACPUInstallHint)
}

// Is makes errors.Is(err, ErrDevices) true.
func (e *DevicesUnsupportedError) Is(target error) bool { return target == ErrDevices }

// DeviceCountError is returned when more devices are asked for than the backend has.
type DeviceCountError struct {
	// Backend describes the backend (Name).
	Backend string
	// Requested is the number of devices asked for; Available how many the backend has.
	Requested, Available int
	// Fix says what to do.
	Fix string
}

func (e *DeviceCountError) Error() string {
	return fmt.Sprintf("backends: %d devices asked for, but the %s backend has %d: %s",
		e.Requested, e.Backend, e.Available, e.Fix)
}

// Is makes errors.Is(err, ErrDevices) true.
func (e *DeviceCountError) Is(target error) bool { return target == ErrDevices }

// BatchDivisibilityError is returned when a global batch cannot be split evenly across the
// devices: every device gets BatchSize/Devices examples.
type BatchDivisibilityError struct {
	// Field is the training setting holding the batch size (its path in training.Settings, e.g.
	// "Data.BatchSize").
	Field string
	// BatchSize is the global batch size and Devices the number of devices.
	BatchSize, Devices int
	// Below and Above are the nearest valid batch sizes (multiples of Devices); Below is 0
	// when BatchSize < Devices.
	Below, Above int
}

func (e *BatchDivisibilityError) Error() string {
	near := fmt.Sprint(e.Above)
	if e.Below > 0 {
		near = fmt.Sprintf("%d or %d", e.Below, e.Above)
	}
	return fmt.Sprintf("backends: training config: %s=%d does not split across %d devices (%d is not a multiple of %d): "+
		"use %s, or another number of devices", e.Field, e.BatchSize, e.Devices, e.BatchSize, e.Devices, near)
}

// Is makes errors.Is(err, ErrDevices) true.
func (e *BatchDivisibilityError) Is(target error) bool { return target == ErrDevices }

// CheckBatchDivisible returns a *BatchDivisibilityError naming field when batch is not a
// multiple of devices, else nil.
func CheckBatchDivisible(field string, batch, devices int) error {
	if devices <= 1 || batch%devices == 0 {
		return nil
	}
	below := batch / devices * devices
	return &BatchDivisibilityError{Field: field, BatchSize: batch, Devices: devices, Below: below, Above: below + devices}
}

func devicesWord(n int) string {
	if n == DevicesAll {
		return "all"
	}
	return fmt.Sprint(n)
}

// DevicesValueError reports a device count that is neither a positive number nor DevicesAll
// (ParseDevices: nor "all"). Training reports it as a *ConfigError of its Devices field.
type DevicesValueError struct {
	// Value is the offending value, formatted.
	Value string
	// Fix says what to use instead.
	Fix string
}

// Error implements error: "backends: devices=VALUE: FIX".
func (e *DevicesValueError) Error() string {
	return fmt.Sprintf("backends: devices=%s: %s", e.Value, e.Fix)
}

// Is makes errors.Is(err, ErrDevices) true.
func (e *DevicesValueError) Is(target error) bool { return target == ErrDevices }
