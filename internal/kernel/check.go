package kernel

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Status is the outcome of one doctor check.
type Status string

// Check is one line of the doctor's checklist.
type Check struct {
	// Name names the item, e.g. "go", "gonb", "kernelspec cifarlab-cpu".
	Name string `json:"name"`
	// Status is the outcome and Detail what was found.
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix says how to repair a failing, absent or suspicious item.
	Fix string `json:"fix,omitempty"`
	// Required items make the doctor fail when their status is StatusFail.
	Required bool `json:"required"`
}

// Report is the doctor's checklist.
type Report struct {
	Checks []Check `json:"checks"`
	// OK is false when a required check failed.
	OK bool `json:"ok"`
}

// Probe adds checks that need more than this package knows (backends, CIFAR data).
type Probe func(ctx context.Context) []Check

// WriteText prints the report, one line per check, with the fix of each check that is not ok.
func (r Report) WriteText(w io.Writer) {
	marks := map[Status]string{StatusOK: " ok ", StatusAbsent: " -- ", StatusWarn: "warn", StatusFail: "FAIL"}
	for _, c := range r.Checks {
		line := fmt.Sprintf("[%s] %-26s %s", marks[c.Status], c.Name, c.Detail)
		if c.Status != StatusOK && c.Fix != "" {
			line += "  → fix: " + c.Fix
		}
		fmt.Fprintln(w, line)
	}
	if r.OK {
		fmt.Fprintln(w, "doctor: everything required is in place")
	} else {
		var failed []string
		for _, c := range r.Checks {
			if c.Required && c.Status == StatusFail {
				failed = append(failed, c.Name)
			}
		}
		fmt.Fprintf(w, "doctor: required items missing or broken: %s\n", strings.Join(failed, ", "))
	}
}

const (
	// StatusOK: the item is present and works.
	StatusOK Status = "ok"
	// StatusAbsent: an optional item is missing (e.g. no GPU); the lab works without it.
	StatusAbsent Status = "absent"
	// StatusWarn: the item works but something is off (e.g. a kernel points at another checkout).
	StatusWarn Status = "warn"
	// StatusFail: the item is missing or broken.
	StatusFail Status = "fail"
)

// newReport is the report of checks: OK unless a required check failed.
func newReport(checks []Check) Report {
	r := Report{Checks: checks, OK: true}
	for _, c := range checks {
		if c.Required && c.Status == StatusFail {
			r.OK = false
		}
	}
	return r
}
