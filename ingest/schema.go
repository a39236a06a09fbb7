package ingest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/storeopt/storeopt/chunkstats"
)

// fieldSpec is one column of a simulated schema with its field metadata.
type fieldSpec struct {
	name        string
	typ         arrow.DataType
	nullable    bool
	unit        string
	description string
}

// fieldsOf lists the columns of a kind; the first is always timestamp_ns.
func fieldsOf(k Kind) []fieldSpec {
	ts := fieldSpec{chunkstats.TimestampColumn, arrow.PrimitiveTypes.Int64, true, "ns",
		"acquisition time, nanoseconds since the Unix epoch"}
	f64 := arrow.PrimitiveTypes.Float64
	switch k {
	case IMU:
		return []fieldSpec{ts,
			{"frame_id", arrow.BinaryTypes.String, false, "", "coordinate frame of the measurement"},
			{"accel_x", f64, false, "m/s^2", "linear acceleration along x"},
			{"accel_y", f64, false, "m/s^2", "linear acceleration along y"},
			{"accel_z", f64, false, "m/s^2", "linear acceleration along z"},
			{"gyro_x", f64, false, "rad/s", "angular velocity about x"},
			{"gyro_y", f64, false, "rad/s", "angular velocity about y"},
			{"gyro_z", f64, false, "rad/s", "angular velocity about z"},
			{"orientation_w", f64, false, "1", "orientation quaternion, scalar part"},
			{"orientation_x", f64, false, "1", "orientation quaternion, x"},
			{"orientation_y", f64, false, "1", "orientation quaternion, y"},
			{"orientation_z", f64, false, "1", "orientation quaternion, z"},
		}
	case GPS:
		return []fieldSpec{ts,
			{"latitude", f64, false, "deg", "WGS84 latitude"},
			{"longitude", f64, false, "deg", "WGS84 longitude"},
			{"altitude", f64, false, "m", "height above the WGS84 ellipsoid"},
			{"fix_type", arrow.PrimitiveTypes.Int8, false, "", "0 no fix, 2 2D fix, 3 3D fix"},
			{"satellites", arrow.PrimitiveTypes.Int32, false, "", "satellites used in the fix"},
			{"hdop", arrow.PrimitiveTypes.Float32, true, "1", "horizontal dilution of precision, null without fix"},
		}
	case Camera:
		return []fieldSpec{ts,
			{"frame_id", arrow.BinaryTypes.String, false, "", "camera optical frame"},
			{"width", arrow.PrimitiveTypes.Int32, false, "px", "image width"},
			{"height", arrow.PrimitiveTypes.Int32, false, "px", "image height"},
			{"encoding", arrow.BinaryTypes.String, false, "", "image encoding"},
			{"data", arrow.BinaryTypes.Binary, false, "B", "encoded image"},
		}
	}
	return nil
}

// schemaOf builds the Arrow schema of a topic: every field carries {"unit", "description"}
// metadata, the schema carries mosaico:* metadata.
func schemaOf(k Kind, sequence, locator string) *arrow.Schema {
	specs := fieldsOf(k)
	fields := make([]arrow.Field, len(specs))
	for i, f := range specs {
		fields[i] = arrow.Field{Name: f.name, Type: f.typ, Nullable: f.nullable,
			Metadata: arrow.NewMetadata([]string{"unit", "description"}, []string{f.unit, f.description})}
	}
	md := arrow.NewMetadata(
		[]string{"mosaico:topic", "mosaico:sequence", "mosaico:ontology", "mosaico:serialization_format"},
		[]string{locator, sequence, string(k), "parquet"})
	return arrow.NewSchema(fields, &md)
}

// fillColumns appends n rows of simulated values for every column but timestamp_ns (builders
// b[1:]); firstRow is the topic-wide index of the first row, so values continue across chunks.
// scratch is a reusable buffer for binary payloads.
// The first huge rows of a Camera chunk carry spec.HugeBytes zero bytes (TopicSpec.HugeEvery).
func fillColumns(k Kind, b []array.Builder, rng *rand.Rand, firstRow int64, n, huge int, spec TopicSpec, scratch *[]byte) {
	switch k {
	case IMU:
		fillIMU(b, rng, firstRow, n)
	case GPS:
		fillGPS(b, rng, firstRow, n)
	case Camera:
		fillCamera(b, rng, n, spec.payloadBytes(), huge, spec.HugeBytes, scratch)
	}
}

func fillIMU(b []array.Builder, rng *rand.Rand, firstRow int64, n int) {
	frame := b[1].(*array.StringBuilder)
	floats := make([]*array.Float64Builder, 10)
	for i := range floats {
		floats[i] = b[2+i].(*array.Float64Builder)
		floats[i].Reserve(n)
	}
	for r := range n {
		frame.Append("imu_link")
		t := float64(firstRow+int64(r)) * 2.5e-3 // seconds since the topic start
		floats[0].Append(0.3*math.Sin(0.5*t) + 0.05*rng.NormFloat64())
		floats[1].Append(0.2*math.Cos(0.3*t) + 0.05*rng.NormFloat64())
		floats[2].Append(9.80665 + 0.05*rng.NormFloat64())
		for g := 3; g < 6; g++ {
			floats[g].Append(0.01 * rng.NormFloat64())
		}
		// A slow yaw rotation with a little noise, normalized.
		yaw := 0.05 * t
		w, x, y, z := math.Cos(yaw/2), 0.001*rng.NormFloat64(), 0.001*rng.NormFloat64(), math.Sin(yaw/2)
		norm := math.Sqrt(w*w + x*x + y*y + z*z)
		floats[6].Append(w / norm)
		floats[7].Append(x / norm)
		floats[8].Append(y / norm)
		floats[9].Append(z / norm)
	}
}

func fillGPS(b []array.Builder, rng *rand.Rand, firstRow int64, n int) {
	lat, lon, alt := b[1].(*array.Float64Builder), b[2].(*array.Float64Builder), b[3].(*array.Float64Builder)
	fix, sats, hdop := b[4].(*array.Int8Builder), b[5].(*array.Int32Builder), b[6].(*array.Float32Builder)
	for r := range n {
		t := float64(firstRow+int64(r)) * 0.1 // seconds since the topic start
		lat.Append(45.4642 + 1e-5*t + 2e-6*rng.NormFloat64())
		lon.Append(9.19 + 1.5e-5*t + 2e-6*rng.NormFloat64())
		alt.Append(122 + 0.5*math.Sin(t/60) + 0.3*rng.NormFloat64())
		if rng.IntN(30) == 0 {
			fix.Append(0)
			sats.Append(int32(rng.IntN(3)))
			hdop.AppendNull()
			continue
		}
		fix.Append(3)
		sats.Append(int32(6 + rng.IntN(9)))
		hdop.Append(float32(0.6 + 1.5*rng.Float64()))
	}
}

func fillCamera(b []array.Builder, rng *rand.Rand, n, payload, huge, hugeBytes int, scratch *[]byte) {
	frame, width, height := b[1].(*array.StringBuilder), b[2].(*array.Int32Builder), b[3].(*array.Int32Builder)
	enc, data := b[4].(*array.StringBuilder), b[5].(*array.BinaryBuilder)
	data.ReserveData((n-huge)*payload + huge*hugeBytes)
	for range huge {
		frame.Append("camera_front_optical")
		width.Append(1280)
		height.Append(720)
		enc.Append("raw")
		data.Append(make([]byte, hugeBytes))
	}
	n -= huge
	if cap(*scratch) < payload+8 {
		*scratch = make([]byte, payload+8)
	}
	buf := (*scratch)[:payload+8]
	for range n {
		frame.Append("camera_front_optical")
		width.Append(1280)
		height.Append(720)
		enc.Append("jpeg")
		// 7 random bits per byte: zstd saves about an eighth, like an already encoded image.
		for i := 0; i < payload; i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], rng.Uint64()&0x7f7f7f7f7f7f7f7f)
		}
		data.Append(buf[:payload])
	}
}
