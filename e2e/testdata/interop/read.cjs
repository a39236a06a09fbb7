// Reads Parquet files with a real tool and prints, as JSON, the column names and types the tool
// reports and every row (rendered by the tool's own JSON conversion, sorted), for the interop
// check (e2e/interop_test.go) to compare a topic's inputs with its optimized outputs.
// Usage: node read.cjs polars|duckdb FILE...
"use strict";

function stringify(v) {
  return JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() + "n" : x));
}

async function readPolars(files) {
  const pl = require("nodejs-polars");
  const df = pl.concat(files.map((f) => pl.readParquet(f)));
  const schema = Object.entries(df.schema).map(([name, dt]) => [name, String(dt)]);
  const rows = df.rows().map(stringify);
  return { schema, rows };
}

async function readDuckDB(files) {
  const { DuckDBInstance } = require("@duckdb/node-api");
  const db = await DuckDBInstance.create(":memory:");
  const con = await db.connect();
  const list = files.map((f) => `'${f.replace(/'/g, "''")}'`).join(", ");
  const reader = await con.runAndReadAll(`SELECT * FROM read_parquet([${list}])`);
  const names = reader.columnNames();
  const schema = reader.columnTypes().map((t, i) => [names[i], String(t)]);
  const rows = reader.getRowsJson().map(stringify);
  return { schema, rows };
}

async function main() {
  const [tool, ...files] = process.argv.slice(2);
  const read = { polars: readPolars, duckdb: readDuckDB }[tool];
  if (!read || files.length === 0) {
    console.error("usage: node read.cjs polars|duckdb FILE...");
    process.exit(2);
  }
  const res = await read(files);
  res.rows.sort();
  process.stdout.write(JSON.stringify(res) + "\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
