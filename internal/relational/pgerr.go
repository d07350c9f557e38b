package relational

import (
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// isConnError reports whether err means the connection to the database was
// lost or never made: a network error, a PostgreSQL connection failure, or
// a server that is shutting down or terminated the session (SQLSTATE class
// 57P, e.g. 57P01 admin_shutdown after pg_terminate_backend or a stop).
func isConnError(err error) bool {
	var ne net.Error
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &ne), errors.As(err, &ce), pgconn.SafeToRetry(err):
		return true
	case errors.As(err, &pe):
		return len(pe.Code) == 5 && (pe.Code[:3] == "57P" || pe.Code[:2] == "08")
	}
	// A connection that dies between messages surfaces as an EOF.
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
