//go:build storeopt_faults

package faults

import (
	"context"
	"slices"
	"testing"
)

func TestHitCountsAndSkips(t *testing.T) {
	for spec, want := range map[string][]bool{
		"p=fail":       {true, true, true, true, true},
		"p=fail*2":     {true, true, false, false, false},
		"p=fail@3":     {false, false, true, true, true},
		"p=fail@3*1":   {false, false, true, false, false},
		"q=fail@1*1":   {false, false, false, false, false},
		"p=fail@1*1;q": {true, false, false, false, false},
	} {
		t.Setenv(EnvVar, spec)
		var got []bool
		for range want {
			got = append(got, Hit(context.Background(), "p") != nil)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: hits acted %v, want %v", spec, got, want)
		}
	}
}
