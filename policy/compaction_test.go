package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/storeopt/storeopt/policy"
)

func ptr(v int64) *int64 { return &v }

// shapes are topics' chunk lists in catalog order (L1 run first, then L0 in ingestion order)
// that every policy's selection must handle.
var shapes = map[string][]policy.ChunkFacts{
	"empty": nil,
	"l0 only": {
		{ChunkID: 1, Level: policy.L0, Ordinal: 0, SizeBytes: 10, Rows: 1, MinTs: ptr(0), MaxTs: ptr(9)},
		{ChunkID: 2, Level: policy.L0, Ordinal: 1, SizeBytes: 10, Rows: 1, MinTs: ptr(10), MaxTs: ptr(19)},
		{ChunkID: 3, Level: policy.L0, Ordinal: 2, SizeBytes: 10, Rows: 1, MinTs: ptr(20), MaxTs: ptr(29)},
	},
	"l1 only": {
		{ChunkID: 1, Level: policy.L1, Ordinal: 0, SizeBytes: 900, Rows: 9, MinTs: ptr(0), MaxTs: ptr(99)},
		{ChunkID: 2, Level: policy.L1, Ordinal: 1, SizeBytes: 900, Rows: 9, MinTs: ptr(100), MaxTs: ptr(199)},
	},
	"run and late l0": {
		{ChunkID: 1, Level: policy.L1, Ordinal: 0, SizeBytes: 900, Rows: 9, MinTs: ptr(0), MaxTs: ptr(99)},
		{ChunkID: 2, Level: policy.L1, Ordinal: 1, SizeBytes: 900, Rows: 9, MinTs: ptr(100), MaxTs: ptr(199)},
		{ChunkID: 3, Level: policy.L1, Ordinal: 2, SizeBytes: 900, Rows: 9, MinTs: ptr(200), MaxTs: ptr(299)},
		{ChunkID: 4, Level: policy.L0, Ordinal: 0, SizeBytes: 10, Rows: 1, MinTs: ptr(120), MaxTs: ptr(130)},
		{ChunkID: 5, Level: policy.L0, Ordinal: 1, SizeBytes: 10, Rows: 1, Nulls: 1},
		{ChunkID: 6, Level: policy.L0, Ordinal: 2, SizeBytes: 10, Rows: 1, MinTs: ptr(140), MaxTs: ptr(150), Rollup: true},
	},
}

// opts makes 10-byte chunks small (below 500) and 900-byte chunks large.
var opts = policy.SelectOptions{MaxChunkSizeBytes: 1000}

func TestEveryPolicyIsFoundByItsName(t *testing.T) {
	seen := map[policy.Policy]bool{}
	for _, c := range policy.All {
		name := c.Name()
		if name == "" || strings.ToLower(string(name)) != string(name) || seen[name] {
			t.Errorf("policy name %q: must be non-empty, lower case and unique", name)
		}
		seen[name] = true
		if got, ok := policy.Of(name); !ok || got != c {
			t.Errorf("Of(%q) = %v, %v; want the registered policy", name, got, ok)
		}
		if got, err := policy.Parse(" " + strings.ToUpper(string(name)) + " "); err != nil || got != name {
			t.Errorf("Parse(%q) = %q, %v", name, got, err)
		}
		if got := name.Label(); got != string(name) {
			t.Errorf("%s: label %q", name, got)
		}
	}
	_, err := policy.Parse("nope")
	for _, c := range policy.All {
		if err == nil || !strings.Contains(err.Error(), string(c.Name())) {
			t.Errorf("Parse(nope) = %v: does not name %q", err, c.Name())
		}
	}
	if p, err := policy.Parse(""); err != nil || p != policy.Full || policy.Policy("").Label() != string(policy.Full) {
		t.Errorf(`"" is %q, %v: want full, as in histories from before policies`, p, err)
	}
}

// TestSelectionsMatchTheirCommit checks, for every resolved policy and chunk shape, that the
// selection is what the policy's commit expects: inputs in catalog order without repeats; a
// replace-all policy reads every chunk and merges; concatenated outputs are L0 and read only
// small L0 chunks that are no rollups, in groups of neighbours of two or more; a policy that
// writes L1 merges.
func TestSelectionsMatchTheirCommit(t *testing.T) {
	resolved := 0
	for _, c := range policy.All {
		if !c.Resolved() {
			continue
		}
		resolved++
		for name, chunks := range shapes {
			t.Run(string(c.Name())+"/"+name, func(t *testing.T) {
				s, err := c.Select(chunks, opts)
				if err != nil {
					t.Fatal(err)
				}
				pic := s.Picture(chunks)
				if !slices.IsSorted(s.Inputs) || len(slices.Compact(slices.Clone(s.Inputs))) != len(s.Inputs) {
					t.Errorf("inputs %v not in catalog order or repeated:\n%s", s.Inputs, pic)
				}
				if c.ReplaceAll() && (len(s.Inputs) != len(chunks) || s.Kind != policy.KindMerge) {
					t.Errorf("replace-all policy reads %d of %d chunks (%s):\n%s", len(s.Inputs), len(chunks), s.Kind, pic)
				}
				if (s.Kind == policy.KindConcatenate) != (c.OutputLevel() == policy.L0) {
					t.Errorf("kind %s with outputs at %s", s.Kind, c.OutputLevel())
				}
				if s.Kind == policy.KindConcatenate {
					var grouped []int
					for _, g := range s.Groups {
						if len(g) < 2 {
							t.Errorf("group %v of fewer than two inputs", g)
						}
						for _, i := range g {
							if chunks[i].Level != policy.L0 || chunks[i].Rollup || chunks[i].SizeBytes >= policy.SmallChunkBytes(opts.MaxChunkSizeBytes) {
								t.Errorf("group %v reads chunk %d, not a small L0 chunk:\n%s", g, i, pic)
							}
						}
						grouped = append(grouped, g...)
					}
					if !slices.Equal(grouped, s.Inputs) {
						t.Errorf("groups %v are not the inputs %v", s.Groups, s.Inputs)
					}
				}
			})
		}
	}
	if resolved == 0 {
		t.Fatal("no resolved policy in policy.All")
	}
}

// TestTriggersAreTheirPolicysOwn checks every policy's trigger and resolution over named facts: a
// policy of finalized topics only needs the topic finalized, every non-full policy counts L0
// chunks, and a resolved policy applies itself while an unresolved one names resolved ones.
func TestTriggersAreTheirPolicysOwn(t *testing.T) {
	f := policy.TriggerSQL{L0Count: "{l0count}", L0Bytes: "{l0bytes}", AnyL0: "{anyl0}", SmallPairL0: "{smallpair}",
		Finalized: "{finalized}", Unoptimized: "{unoptimized}", MinChunks: "{min}", MaxSize: "{max}"}
	for _, c := range policy.All {
		trig, applies := c.Trigger(f), c.Applies(f)
		if strings.Count(trig, "(") != strings.Count(trig, ")") {
			t.Errorf("%s: unbalanced trigger %s", c.Name(), trig)
		}
		if c.FinalizedOnly() && !strings.HasPrefix(trig, "({finalized} AND ") {
			t.Errorf("%s: compacts finalized topics only, but its trigger is %s", c.Name(), trig)
		}
		if !c.ReplaceAll() && !strings.Contains(trig, "{l0count} >= ") {
			t.Errorf("%s: trigger %s does not count L0 chunks", c.Name(), trig)
		}
		if c.Resolved() {
			if want := "'" + string(c.Name()) + "'"; applies != want {
				t.Errorf("%s: applies %s, want %s", c.Name(), applies, want)
			}
			continue
		}
		if _, err := c.Select(shapes["l0 only"], opts); err == nil {
			t.Errorf("%s: unresolved, yet it selects", c.Name())
		}
		named := 0
		for _, r := range policy.All {
			if r.Resolved() && strings.Contains(applies, "'"+string(r.Name())+"'") {
				named++
			}
		}
		if named == 0 || strings.Contains(applies, "'"+string(c.Name())+"'") {
			t.Errorf("%s: applies %s: must name resolved policies only", c.Name(), applies)
		}
	}
}
