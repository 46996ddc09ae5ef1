package main

import (
	"fmt"
	"strings"

	"github.com/cifarlab/cifarlab/cifarlib/data"
)

// importNext is what `cifarlab import` suggests next: commands that run as printed (the run's
// folder, its model and the data folder given to import, or the default one, included).
func importNext(dir, arch, dataDir string, spec data.Spec) string {
	q := shellWord
	dataset := "--dataset " + spec.Name
	if spec.Name == "cifar100" {
		dataset += " --labels " + spec.Labels.String()
	}
	other := "--dataset cifar100"
	if spec.Name == "cifar100" {
		other = "--dataset cifar10"
	}
	lines := []string{
		fmt.Sprintf("cifarlab eval --checkpoint %s --data %s", q(dir), q(dataDir)),
		fmt.Sprintf("cifarlab train --checkpoint %s --model %s %s --data %s --steps 500   (trains it on, head kept)", q(dir), arch, dataset, q(dataDir)),
		fmt.Sprintf("cifarlab diagnose --from %s %s --data %s", q(dir), other, q(dataDir)),
		fmt.Sprintf("cifarlab train --from %s %s --data %s --checkpoint %s --steps 500   (a new head for another dataset)", q(dir), other, q(dataDir), q(dir+"-transfer")),
	}
	return "next:\n  " + strings.Join(lines, "\n  ")
}

// shellWord quotes s for a POSIX shell when it holds anything but plain path characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
