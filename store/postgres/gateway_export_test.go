package postgres

import "novaos.dev/novaos/gateway"

// ListRunsSQL is the statement and arguments GatewayStore.ListRuns runs
// for f.
func ListRunsSQL(f gateway.RunFilter) (string, []any) { return listRunsSQL(f) }

// ClaimRunsSQL is GatewayStore.ClaimRuns' statement.
const ClaimRunsSQL = claimRunsSQL
