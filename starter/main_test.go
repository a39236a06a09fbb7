package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagUsageNamesNoValue checks every flag of every starter command: pflag takes the first
// `backquoted` word of a usage string as the name of the flag's value, so a usage that quotes a
// command in backquotes turns --help into "--no-finalize starter finalize --sequence NAME".
func TestFlagUsageNamesNoValue(t *testing.T) {
	var visit func(cmd *cobra.Command)
	visit = func(cmd *cobra.Command) {
		check := func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " -") {
				t.Errorf("starter %s --%s: --help shows the value name %q (backquotes in its usage)", cmd.Name(), f.Name, name)
			}
		}
		cmd.Flags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, sub := range cmd.Commands() {
			visit(sub)
		}
	}
	visit(newRootCommand())
}
