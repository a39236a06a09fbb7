package activities

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/parquetio"
	"github.com/storeopt/storeopt/plan"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/verify"
)

// Commit copies the topic's metadata.json byte for byte into the fresh prefix, verifies the staged
// output against the plan (docs/design.md#verify-before-commit: rows, null timestamps, timestamp
// range, content digests, every output's footer equal to the inputs', global order, every object
// present with its recorded size, every row of every chunk the commit replaces, as the catalog
// holds it, taken by exactly one output) and switches the topic in one catalog transaction that
// also checks the lease and the planned chunk set (docs/design.md#commit-is-atomic-and-idempotent).
// A retry after a successful commit returns AlreadyCommitted and changes nothing. Errors:
// ErrTypeVerification, ErrTypeLeaseLost, ErrTypeChunkSetChanged; the topic is unchanged after any.
func (a *Activities) Commit(ctx context.Context, in CommitInput) (CommitResult, error) {
	_, token := run(ctx)
	topic, err := a.Catalog.Topic(ctx, in.TopicID)
	if err != nil {
		return CommitResult{}, a.classify(fmt.Sprintf("#%d", in.TopicID), err)
	}
	var res CommitResult
	if lease, err := a.Catalog.LeaseOf(ctx, topic.ID); err == nil && lease.FencingToken == token {
		if err := a.copyMetadata(ctx, lease.OldPrefix, lease.FreshPrefix); err != nil {
			return res, a.classify(topic.Locator, err)
		}
	}
	if err := faults.Hit(ctx, faults.CommitBeforeTx); err != nil {
		return res, err
	}
	// The plan says how the chunk set changes, as the commit's transaction reads it: a plan
	// replaced or dropped meanwhile is never committed with another's spec, and there is no
	// default (docs/design.md#commit-is-atomic-and-idempotent). A retry after a successful
	// commit is answered by the catalog from its optimization record before any plan is read;
	// without a plan and without that record the commit fails (lease lost, or no plan).
	var stored *plan.Plan
	specOf := func(rec catalog.PlanRecord) (catalog.CommitSpec, error) {
		p, err := decodePlan(rec)
		if err != nil {
			return catalog.CommitSpec{}, err
		}
		stored = p
		return commitSpec(p), nil
	}
	cr, err := a.Catalog.CommitPlan(ctx, topic.ID, token, specOf, func(rec catalog.PlanRecord, staged []catalog.StagedChunk) error {
		return a.verifyStaged(ctx, stored, rec, staged, &res)
	})
	if err != nil {
		return CommitResult{}, a.classify(topic.Locator, err)
	}
	res.AlreadyCommitted = cr.AlreadyCommitted
	res.OldPrefix, res.NewPrefix = cr.OldPrefix, cr.NewPrefix
	res.InputChunks, res.OutputChunks = cr.InputChunks, cr.OutputChunks
	res.Policy = string(cr.Policy) // the switch is done: RecordOutcome counts it even if an error follows
	if err := faults.Hit(ctx, faults.CommitAfterTx); err != nil {
		return res, err // the retry finds it committed
	}
	logger(ctx).Info("Topic switched", "topic", topic.Locator, "oldPrefix", res.OldPrefix,
		"newPrefix", res.NewPrefix, "inputChunks", res.InputChunks, "outputChunks", res.OutputChunks,
		"alreadyCommitted", res.AlreadyCommitted)
	return res, nil
}

// commitSpec returns how the commit of plan p changes the topic's chunk set.
func commitSpec(p *plan.Plan) catalog.CommitSpec {
	pol := p.EffectivePolicy()
	return catalog.CommitSpec{Policy: pol, ReplaceAll: pol.ReplaceAll(),
		L1ShiftFrom: p.Placement.ShiftFrom, L1ShiftBy: p.Placement.ShiftBy}
}

// verifyStaged is the verification run inside the commit transaction.
// p is rec's body, decoded.
func (a *Activities) verifyStaged(ctx context.Context, p *plan.Plan, rec catalog.PlanRecord, staged []catalog.StagedChunk, res *CommitResult) error {
	facts := make([]verify.OutputFacts, len(staged))
	for i, s := range staged {
		if len(s.Digest) != 32+parquetio.FingerprintBytes {
			return &verify.MismatchError{What: fmt.Sprintf("output chunk %d has a digest of %d bytes", s.Ordinal, len(s.Digest))}
		}
		read, err := verify.UnmarshalDigest(s.Digest[:16])
		if err != nil {
			return err
		}
		written, err := verify.UnmarshalDigest(s.Digest[16:32])
		if err != nil {
			return err
		}
		taken, err := verify.UnmarshalTaken(s.Taken)
		if err != nil {
			return &verify.MismatchError{What: fmt.Sprintf("output chunk %d: %v", s.Ordinal, err)}
		}
		facts[i] = verify.OutputFacts{Ordinal: s.Ordinal, Key: s.ObjectKey, Rows: s.RowCount, TimestampNulls: s.TimestampNullCount,
			MinTs: s.MinTimestampNs, MaxTs: s.MaxTimestampNs, Read: read, Written: written, Taken: taken, Footer: s.Digest[32:]}
		if err := store.CheckKey(rec.FreshPrefix, s.ObjectKey); err != nil {
			return &verify.MismatchError{What: fmt.Sprintf("output chunk %d: %v", s.Ordinal, err)}
		}
		if s.Ordinal < len(p.Outputs) {
			if want := p.Target(p.Outputs[s.Ordinal]); s.TargetOrdinal == nil || *s.TargetOrdinal != want {
				return &verify.MismatchError{What: fmt.Sprintf("output chunk %d is staged for ordinal %s, planned %d",
					s.Ordinal, fmtOrdinal(s.TargetOrdinal), want)}
			}
		}
		attrs, err := a.Bucket.Attributes(ctx, s.ObjectKey)
		if _, ok := storeFaultOf(err); ok {
			return fmt.Errorf("output chunk %s: %w", s.ObjectKey, err) // the store's fault, not the output's
		}
		if err != nil {
			return &verify.MismatchError{What: fmt.Sprintf("output chunk %s is not readable in the store: %v", s.ObjectKey, err)}
		}
		if attrs.Size != s.SizeBytes {
			return &verify.MismatchError{What: fmt.Sprintf("output chunk %s has %d bytes in the store, %d recorded", s.ObjectKey, attrs.Size, s.SizeBytes)}
		}
		res.Rows += s.RowCount
		res.OutputBytes += s.SizeBytes
	}
	res.InputBytes = p.InputBytes()
	want := verify.Expected{Outputs: len(p.Outputs), Rows: p.Totals.Rows,
		TimestampNulls: p.Totals.TimestampNulls, MinTs: p.Totals.MinTs, MaxTs: p.Totals.MaxTs,
		Inputs: replacedChunks(rec.Inputs),
		// A rollup's outputs are L0 chunks: they may overlap each other in time.
		Unordered: p.EffectiveKind() == plan.KindConcatenate}
	if !want.Unordered {
		pl := p.Placement
		want.Before, want.After, want.AfterRows, want.AfterHasNonNull = pl.Before, pl.After, pl.AfterRows, pl.AfterHasNonNull
	}
	footer, err := hex.DecodeString(p.FooterID)
	if err != nil || len(footer) != parquetio.FingerprintBytes {
		return &verify.MismatchError{What: fmt.Sprintf("stored plan has no valid footer ID (%q)", p.FooterID)}
	}
	want.Footer = footer
	return verify.Check(want, facts)
}

// replacedChunks returns the chunks the commit replaces, as the catalog holds them inside the
// commit's transaction (catalog.PlanRecord.Inputs), for verification: every row of each must be
// taken by exactly one output, whatever the stored plan says it reads (a chunk the plan left out
// would otherwise be deleted unread).
func replacedChunks(chunks []catalog.Chunk) []verify.InputChunk {
	out := make([]verify.InputChunk, len(chunks))
	for i, c := range chunks {
		out[i] = verify.InputChunk{ID: c.ID, Key: c.ObjectKey, Rows: c.RowCount}
	}
	return out
}

func fmtOrdinal(o *int) string {
	if o == nil {
		return "(none)"
	}
	return fmt.Sprint(*o)
}

// copyMetadata copies <old>/metadata.json to <fresh>/metadata.json and checks the copy is
// byte-identical.
func (a *Activities) copyMetadata(ctx context.Context, oldPrefix, freshPrefix string) error {
	src, dst := store.MetadataKey(oldPrefix), store.MetadataKey(freshPrefix)
	want, err := a.Bucket.ReadAll(ctx, src)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	if err := store.WriteAll(ctx, a.Bucket, dst, want, nil); err != nil {
		return fmt.Errorf("write %s: %w", dst, err)
	}
	got, err := a.Bucket.ReadAll(ctx, dst)
	if err != nil {
		return fmt.Errorf("read back %s: %w", dst, err)
	}
	if !bytes.Equal(want, got) {
		return &verify.MismatchError{What: fmt.Sprintf("%s differs from %s after copying", dst, src)}
	}
	return nil
}
