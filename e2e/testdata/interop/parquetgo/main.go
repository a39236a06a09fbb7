// Command parquetgo writes the fixture topic of a Parquet writer without Arrow for storeopt's
// interop check (e2e/interop_test.go): ../topics/parquetgo/, three chunks written by
// github.com/parquet-go/parquet-go from a Go struct (no ARROW:schema in the footer; a key/value
// pair of its own; a repeated field without LIST annotation, a LIST, a MAP, a group, optional
// fields, a millisecond timestamp and a UUID). It is its own module so that parquet-go stays out
// of storeopt's go.mod. Run from this folder: go run .
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"
)

type position struct {
	X float64 `parquet:"x"`
	Y float64 `parquet:"y"`
}

type reading struct {
	TimestampNs int64             `parquet:"timestamp_ns"`
	Sensor      string            `parquet:"sensor,dict"`
	Value       *float64          `parquet:"value,optional"`
	Tags        []string          `parquet:"tags,list"`
	Samples     []float32         `parquet:"samples"`
	Pos         position          `parquet:"pos"`
	Meta        map[string]string `parquet:"meta"`
	At          time.Time         `parquet:"at,timestamp(millisecond)"`
	ID          [16]byte          `parquet:"id,uuid"`
	Note        *string           `parquet:"note,optional"`
	Count       uint32            `parquet:"count"`
}

const (
	chunks = 3
	rows   = 40
)

func main() {
	dir := filepath.Join("..", "topics", "parquetgo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	for c := range chunks {
		var recs []reading
		for i := range rows {
			g := c*rows + i
			k := i
			if c == 1 {
				k = (i * 17) % rows // stored unsorted
			}
			r := reading{
				TimestampNs: 1_700_000_000_000_000_000 + int64(c)*13_000 + int64(k)*1_000,
				Sensor:      []string{"imu", "gps", "cam"}[g%3],
				Tags:        []string{fmt.Sprintf("t%d", g%4)},
				Samples:     []float32{float32(g), float32(g) / 2},
				Pos:         position{X: float64(g) * 0.5, Y: -float64(i)},
				Meta:        map[string]string{"k": fmt.Sprint(g % 5)},
				At:          time.UnixMilli(1_704_067_200_000 + int64(g)*1_001).UTC(),
				Count:       uint32(4_000_000_000 + g),
			}
			r.ID[15] = byte(g)
			if i%4 != 1 {
				v := float64(g) / 8
				r.Value = &v
			}
			if i%6 == 0 {
				r.Tags = nil
				r.Samples = nil
			}
			if i%5 == 2 {
				n := fmt.Sprintf("note %d", g)
				r.Note = &n
			}
			recs = append(recs, r)
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%05d.parquet", c)))
		if err != nil {
			fail(err)
		}
		w := parquet.NewGenericWriter[reading](f, parquet.Compression(&parquet.Zstd),
			parquet.KeyValueMetadata("writer", "parquet-go fixture for storeopt"))
		if _, err := w.Write(recs); err != nil {
			fail(err)
		}
		if err := w.Close(); err != nil {
			fail(err)
		}
		if err := f.Close(); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "parquetgo:", err)
	os.Exit(1)
}
