// Writes the fixture topics of real Arrow writers that storeopt's interop check optimizes
// (e2e/interop_test.go): topics/polars/ with nodejs-polars (Rust writer) and topics/duckdb/ with
// DuckDB's COPY. Each topic is three chunks of 40 rows whose timestamp_ns ranges overlap; the
// second chunk is unsorted and holds null timestamps, so the merge interleaves all three.
// Topics shaped after public bug reports of these writers, two chunks each:
//   drift_added_column   polars files of one dataset where a later file has one more column
//                        (pola-rs/polars#13438): real schema drift, refused
//   bug_polars_null_column a column that is null in every row of every file
//                        (pola-rs/polars#10788: such columns broke reads of many files)
//   bug_duckdb_timetz    DuckDB's TIMETZ and TIME columns (duckdb/duckdb#14734, #12041, #19051)
//   bug_duckdb_nested    lists of structs with nulls and empty lists in many small row groups
//                        (pola-rs/polars#14902: nested columns over row groups)
// Run from this folder after `npm ci`: node make-fixtures.cjs
"use strict";
const fs = require("fs");
const path = require("path");
const pl = require("nodejs-polars");
const { DuckDBInstance } = require("@duckdb/node-api");

const ROWS = 40;
const CHUNKS = 3;

// timestamp of row i of chunk c (nanoseconds; null for some rows of chunk 1).
function ts(c, i) {
  if (c === 1 && i % 9 === 4) return null;
  const base = 1700000000000000000n + BigInt(c) * 13000n;
  const k = c === 1 ? (i * 17) % ROWS : i; // chunk 1 is stored unsorted
  return (base + BigInt(k) * 1000n).toString();
}

function out(topic, c) {
  const dir = path.join(__dirname, "topics", topic);
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, String(c).padStart(5, "0") + ".parquet");
}

function polarsChunk(c) {
  const n = ROWS;
  const idx = [...Array(n).keys()];
  const g = c * n;
  return pl.DataFrame([
    pl.Series("timestamp_ns", idx.map((i) => ts(c, i)), pl.Utf8).cast(pl.Int64),
    pl.Series("label", idx.map((i) => (i % 7 === 3 ? null : `label-${(g + i) % 11}-ü`)), pl.Utf8),
    pl.Series("cat", idx.map((i) => ["idle", "move", "stop"][(g + i) % 3]), pl.Utf8).cast(pl.Categorical),
    pl.Series("u64", idx.map((i) => (i % 5 === 0 ? 18446744073709551615n : BigInt(g + i) + 9223372036854775808n)), pl.UInt64),
    pl.Series("f32", idx.map((i) => (i % 8 === 1 ? null : (g + i) / 4)), pl.Float32),
    pl.Series("i16", idx.map((i) => ((g + i) * 997) % 32767 - 16000), pl.Int16),
    pl.Series("dt_ms", idx.map((i) => new Date(Date.UTC(2024, 0, 1) + (g + i) * 1001)), pl.Datetime("ms")),
    pl.Series("dt_us_tz", idx.map((i) => new Date(Date.UTC(2024, 5, 1) + (g + i) * 60000)), pl.Datetime("us", "Europe/Rome")),
    pl.Series("day", idx.map((i) => new Date(Date.UTC(2024, 0, 1 + ((g + i) % 365)))), pl.Date),
    pl.Series("tags", idx.map((i) => (i % 6 === 2 ? null : i % 6 === 4 ? [] : [`t${i % 3}`, `u${(g + i) % 4}`])), pl.List(pl.Utf8)),
    pl.Series("point", idx.map((i) => ({ x: (g + i) * 0.5, name: i % 4 === 1 ? null : `p${i % 5}` }))),
    pl.Series("ok", idx.map((i) => (i % 10 === 9 ? null : (g + i) % 2 === 0)), pl.Bool),
  ]);
}

async function duckdbChunk(con, c, file) {
  // DuckDB types as its users write them; no ARROW:schema in the footer.
  await con.run(`COPY (
    SELECT
      CASE WHEN ${c} = 1 AND i % 9 = 4 THEN NULL
           ELSE 1700000000000000000 + ${c} * 13000 + (CASE WHEN ${c} = 1 THEN (i * 17) % ${ROWS} ELSE i END) * 1000
      END::BIGINT AS timestamp_ns,
      CASE WHEN i % 7 = 3 THEN NULL ELSE 'label-' || ((${c * ROWS} + i) % 11) END AS label,
      (${c * ROWS} + i)::UBIGINT + 18446744073709551000 AS u64,
      TIMESTAMP '2024-01-01' + to_seconds(${c * ROWS} + i) AS ts,
      TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_microseconds(${c * ROWS} + i) AS tstz,
      DATE '2024-01-01' + (${c * ROWS} + i)::INTEGER AS day,
      TIME '01:02:03' + to_seconds(i) AS tod,
      ((${c * ROWS} + i) / 7)::DECIMAL(9,2) AS dec9,
      ((${c * ROWS} + i) / 7)::DECIMAL(18,3) AS dec18,
      ((${c * ROWS} + i) / 3)::DECIMAL(38,10) AS dec38,
      ('00000000-0000-0000-0000-' || lpad(((${c * ROWS} + i) * 7919)::VARCHAR, 12, '0'))::UUID AS id,
      ('{"n": ' || i || '}')::JSON AS doc,
      CASE WHEN i % 5 = 0 THEN NULL ELSE ('\\x' || lpad(to_hex(i), 2, '0'))::BLOB END AS payload,
      CASE WHEN i % 6 = 2 THEN NULL WHEN i % 6 = 4 THEN [] ELSE [i, NULL, ${c}] END::INTEGER[] AS ints,
      [i * 1.5, 2, 3]::FLOAT[3] AS vec,
      CASE WHEN i % 8 = 1 THEN NULL ELSE {'x': i * 0.25, 's': 's' || (i % 3)} END AS st,
      MAP {'k' || (i % 2): i, 'z': NULL} AS m,
      (i % 200)::UTINYINT AS small,
      i % 2 = 0 AS even
    FROM range(${ROWS}) t(i)
  ) TO '${file}' (FORMAT parquet, COMPRESSION zstd)`);
}

function tsSeries(c, n) {
  return pl.Series("timestamp_ns", [...Array(n).keys()].map((i) => ts(c, i)), pl.Utf8).cast(pl.Int64);
}

async function bugTopics(con) {
  // drift_added_column: chunk 1 has a column more.
  for (let c = 0; c < 2; c++) {
    const cols = [tsSeries(c, 10), pl.Series("a", [...Array(10).keys()], pl.Int64), pl.Series("b", [...Array(10).keys()], pl.Float64)];
    if (c === 1) cols.push(pl.Series("c", [...Array(10).keys()].map((i) => `c${i}`), pl.Utf8));
    pl.DataFrame(cols).writeParquet(out("drift_added_column", c));
  }
  // bug_polars_null_column: "note" is null everywhere.
  for (let c = 0; c < 2; c++) {
    pl.DataFrame([tsSeries(c, 12), pl.Series("note", Array(12).fill(null)), pl.Series("v", [...Array(12).keys()], pl.Int32)])
      .writeParquet(out("bug_polars_null_column", c));
  }
  for (let c = 0; c < 2; c++) {
    await con.run(`COPY (
      SELECT ${1700000000000000000n + BigInt(c) * 5000n} + (i * 7 % 12) * 1000 AS timestamp_ns,
        ('01:02:03+0' || (i % 9))::TIMETZ AS tz, TIME '23:59:59.999999' - to_seconds(i) AS t
      FROM range(12) t(i)) TO '${out("bug_duckdb_timetz", c)}' (FORMAT parquet)`);
    await con.run(`COPY (
      SELECT ${1700000000000000000n + BigInt(c) * 5000n} + i * 1000 AS timestamp_ns,
        CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN [] ELSE
          [{'k': i, 'tags': CASE WHEN i % 3 = 0 THEN NULL ELSE ['x', NULL] END}, NULL] END AS items
      FROM range(30) t(i)) TO '${out("bug_duckdb_nested", c)}' (FORMAT parquet, ROW_GROUP_SIZE 4)`);
  }
}

async function main() {
  for (let c = 0; c < CHUNKS; c++) polarsChunk(c).writeParquet(out("polars", c));
  const db = await DuckDBInstance.create(":memory:");
  const con = await db.connect();
  for (let c = 0; c < CHUNKS; c++) await duckdbChunk(con, c, out("duckdb", c));
  await bugTopics(con);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
