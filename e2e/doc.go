// Package e2e holds storeopt's end-to-end tests: a real Temporal dev server, a real PostgreSQL
// catalog, a file:// object store and real Parquet files, driven through the same workers and
// runs a user starts. It has no non-test code besides this comment.
package e2e
