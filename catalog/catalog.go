package catalog

import "github.com/jackc/pgx/v5/pgxpool"

// Catalog is the PostgreSQL catalog. It is safe for concurrent use.
type Catalog struct {
	Pool *pgxpool.Pool
}
