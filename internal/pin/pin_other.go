//go:build !linux

package pin

import (
	"errors"
	"fmt"
)

// Process pins every thread of the calling process to cpus. It is implemented on Linux only; elsewhere it
// validates cpus and returns an error wrapping errors.ErrUnsupported.
func Process(cpus []int) error {
	if _, err := validate(cpus); err != nil {
		return fmt.Errorf("cannot pin process: %w", err)
	}
	return fmt.Errorf("cannot pin process: cpu pinning needs linux: %w", errors.ErrUnsupported)
}

// Current returns the CPUs the calling thread may run on. It is implemented on Linux only; elsewhere it
// returns an error wrapping errors.ErrUnsupported.
func Current() ([]int, error) {
	return nil, fmt.Errorf("cannot read the cpu mask: needs linux: %w", errors.ErrUnsupported)
}

// Affinity returns the CPUs the calling process may run on. It is implemented on Linux only; elsewhere
// it returns an error wrapping errors.ErrUnsupported.
func Affinity() (cpus []int, uniform bool, err error) {
	return nil, false, fmt.Errorf("cannot read the cpu mask: needs linux: %w", errors.ErrUnsupported)
}

// Online returns the machine's online CPUs. It is implemented on Linux only; elsewhere it returns an
// error wrapping errors.ErrUnsupported.
func Online() ([]int, error) {
	return nil, fmt.Errorf("cannot read the online cpus: needs linux: %w", errors.ErrUnsupported)
}
